import type { NotificationEventType } from '@/db/schema';
import { eventLabels } from '@/lib/notify/messages';

/** Checkboxes, one an event type, posted as `events`. */
export function EventChoices({ legend, types, chosen, idPrefix }: { legend: string; types: NotificationEventType[]; chosen: readonly NotificationEventType[]; idPrefix: string }) {
  return (
    <fieldset className="space-y-2">
      <legend className="text-sm font-medium">{legend}</legend>
      {types.map((type) => (
        <div key={type} className="flex items-center gap-2">
          <input
            type="checkbox"
            id={`${idPrefix}-${type}`}
            name="events"
            value={type}
            defaultChecked={chosen.includes(type)}
            className="h-4 w-4 rounded border-zinc-300 dark:border-zinc-700"
          />
          <label htmlFor={`${idPrefix}-${type}`} className="text-sm">
            {eventLabels[type]} <code className="font-mono text-xs text-zinc-500 dark:text-zinc-400">{type}</code>
          </label>
        </div>
      ))}
    </fieldset>
  );
}
