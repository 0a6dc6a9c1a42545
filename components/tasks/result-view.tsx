/** A tool result as a person wants to see it: text, media, resources and structured content. */
type Block = Record<string, unknown> & { type: string };

const isString = (value: unknown): value is string => typeof value === 'string';

/**
 * The media types a tool's output may be shown as. The tool names the type, so anything else (SVG
 * with its scripts, HTML, types a browser sniffs) is only offered as a download of opaque bytes.
 */
const shownImageTypes = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif']);
const playedAudioTypes = new Set(['audio/mpeg', 'audio/wav', 'audio/x-wav', 'audio/wave', 'audio/ogg', 'audio/webm', 'audio/aac', 'audio/mp4', 'audio/flac']);
const opaqueType = 'application/octet-stream';

/** The bare, lower-case media type: parameters dropped. */
const mediaType = (value: unknown) => (isString(value) ? value.split(';')[0].trim().toLowerCase() : '');
const isBase64 = (value: unknown): value is string => isString(value) && /^[A-Za-z0-9+/]*={0,2}$/.test(value);

function Download({ data, type, label }: { data: string; type: string; label: string }) {
  const safeType = shownImageTypes.has(type) || playedAudioTypes.has(type) ? type : opaqueType;
  return (
    <a href={`data:${safeType};base64,${data}`} download className="text-sm text-blue-700 underline dark:text-blue-400">
      {label} ({Math.round((data.length * 3) / 4 / 1024)} KiB{type ? `, ${type}` : ''})
    </a>
  );
}

function ContentBlock({ block }: { block: Block }) {
  switch (block.type) {
    case 'text':
      return <p className="whitespace-pre-wrap break-words text-sm">{String(block.text ?? '')}</p>;
    case 'image': {
      if (!isBase64(block.data)) return null;
      const type = mediaType(block.mimeType);
      return shownImageTypes.has(type) ? (
        // eslint-disable-next-line @next/next/no-img-element -- a data URL from the tool, not an optimisable asset
        <img src={`data:${type};base64,${block.data}`} alt="Image returned by the tool" className="max-h-96 rounded border border-zinc-200 dark:border-zinc-700" />
      ) : (
        <Download data={block.data} type={type} label="Download the image" />
      );
    }
    case 'audio': {
      if (!isBase64(block.data)) return null;
      const type = mediaType(block.mimeType);
      return playedAudioTypes.has(type) ? (
        <audio controls src={`data:${type};base64,${block.data}`} aria-label="Audio returned by the tool" />
      ) : (
        <Download data={block.data} type={type} label="Download the audio" />
      );
    }
    case 'resource_link':
      return (
        <p className="text-sm">
          <span className="mr-2 rounded bg-zinc-100 px-1.5 py-0.5 text-xs dark:bg-zinc-800">Resource link</span>
          {/^https?:\/\//.test(String(block.uri)) ? (
            <a href={String(block.uri)} className="text-blue-700 underline dark:text-blue-400" rel="noreferrer noopener" target="_blank">
              {String(block.title ?? block.name ?? block.uri)}
            </a>
          ) : (
            <span className="font-mono">{String(block.uri)}</span>
          )}
          {isString(block.description) && <span className="ml-2 text-zinc-500">{block.description}</span>}
        </p>
      );
    case 'resource': {
      const resource = (block.resource ?? {}) as Record<string, unknown>;
      return (
        <div className="rounded border border-zinc-200 p-3 dark:border-zinc-700">
          <p className="mb-1 text-xs text-zinc-500 dark:text-zinc-400">
            Embedded resource <span className="font-mono">{String(resource.uri ?? '')}</span>
            {isString(resource.mimeType) && ` · ${resource.mimeType}`}
          </p>
          {isString(resource.text) ? (
            <pre className="overflow-x-auto whitespace-pre-wrap text-sm">{resource.text}</pre>
          ) : isBase64(resource.blob) ? (
            <Download data={resource.blob} type={mediaType(resource.mimeType)} label="Download" />
          ) : null}
        </div>
      );
    }
    default:
      return <JsonBlock value={block} />;
  }
}

export function JsonBlock({ value }: { value: unknown }) {
  return (
    <pre className="overflow-x-auto rounded bg-zinc-50 p-3 font-mono text-xs dark:bg-zinc-950">{JSON.stringify(value, null, 2)}</pre>
  );
}

export function ResultView({
  result,
  error,
}: {
  result: Record<string, unknown> | null;
  error: { code: number; message: string; data?: unknown } | null;
}) {
  if (error) {
    return (
      <div role="alert" className="rounded-md border border-red-200 bg-red-50 p-3 text-sm text-red-900 dark:border-red-900 dark:bg-red-950 dark:text-red-200">
        <p className="font-medium">Error {error.code}</p>
        <p className="mt-1 whitespace-pre-wrap">{error.message}</p>
        {error.data !== undefined && <JsonBlock value={error.data} />}
      </div>
    );
  }
  if (!result) return <p className="text-sm text-zinc-500 dark:text-zinc-400">No result yet.</p>;
  // The structured content is shown below as such: its copy as serialized JSON (for clients that read
  // only `content`) is not shown twice.
  const structuredText = result.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : undefined;
  const content = (Array.isArray(result.content) ? (result.content as Block[]) : []).filter(
    (block) => !(block.type === 'text' && structuredText !== undefined && block.text === structuredText),
  );
  const isError = result.isError === true;
  return (
    <div className={`space-y-3 ${isError ? 'rounded-md border border-red-200 bg-red-50 p-3 text-red-900 dark:border-red-900 dark:bg-red-950 dark:text-red-200' : ''}`}>
      {isError && <p className="text-sm font-medium">The tool reported an error</p>}
      {content.map((block, index) => (
        <ContentBlock key={index} block={block} />
      ))}
      {result.structuredContent !== undefined && (
        <div>
          <p className="mb-1 text-xs font-medium text-zinc-500 dark:text-zinc-400">Structured content</p>
          <JsonBlock value={result.structuredContent} />
        </div>
      )}
    </div>
  );
}
