// The dashboard's service worker: shows the server's push messages, or hands them to an open, visible
// dashboard page to show in place; a click on a notification opens (or focuses) the task's page.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

function parse(data) {
  try {
    return data ? data.json() : null;
  } catch {
    return null;
  }
}

self.addEventListener('push', (event) => {
  const message = parse(event.data) || { title: 'A task needs you', body: '', url: '/inbox', tag: 'unknown' };
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const visible = windows.filter((client) => client.visibilityState === 'visible');
      if (visible.length > 0) {
        for (const client of visible) client.postMessage({ type: 'task-push', message });
        return;
      }
      await self.registration.showNotification(message.title, {
        body: message.body,
        tag: message.tag,
        data: { url: message.url },
        requireInteraction: Boolean(message.question),
      });
    })(),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const target = new URL((event.notification.data && event.notification.data.url) || '/inbox', self.location.origin);
  // Only the dashboard's own pages are opened.
  const url = target.origin === self.location.origin ? target.href : new URL('/inbox', self.location.origin).href;
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const open = windows.find((client) => client.url === url);
      if (open) return open.focus();
      return self.clients.openWindow(url);
    })(),
  );
});
