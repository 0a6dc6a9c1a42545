// The dashboard's service worker: shows the server's push messages, or hands them to an open, visible
// dashboard page to show in place; a click on a notification opens (or focuses) the task's page.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

/**
 * How long the visible pages have to say they showed a message. A page may be listed while it is
 * already leaving, or before it can show anything (still loading, or not a dashboard page): when none
 * answers in time, the message is shown as a notification instead, so that it is never lost.
 */
const pageAnswerMs = 2000;

function parse(data) {
  try {
    return data ? data.json() : null;
  } catch {
    return null;
  }
}

/** Hands the message to each of `windows`; resolves whether one of them showed it. */
function showInPages(windows, message) {
  return new Promise((resolve) => {
    const channels = [];
    let settled = false;
    const settle = (shown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const channel of channels) channel.port1.close();
      resolve(shown);
    };
    const timer = setTimeout(() => settle(false), pageAnswerMs);
    for (const client of windows) {
      const channel = new MessageChannel();
      channel.port1.onmessage = (event) => {
        if (event.data && event.data.type === 'task-push-shown') settle(true);
      };
      try {
        client.postMessage({ type: 'task-push', message }, [channel.port2]);
        channels.push(channel);
      } catch {
        // The page went away meanwhile.
      }
    }
    if (channels.length === 0) settle(false);
  });
}

self.addEventListener('push', (event) => {
  const message = parse(event.data) || { title: 'A task needs you', body: '', url: '/inbox', tag: 'unknown' };
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const visible = windows.filter((client) => client.visibilityState === 'visible');
      if (visible.length > 0 && (await showInPages(visible, message))) return;
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
