import { useState } from "preact/hooks";

// The view's shareable URL and the same question as a command line and a
// curl call.

interface ShareProps {
  /** The view's URL with its inputs. */
  url: string;
  /** The CLI command (headroom …). */
  cli: string;
  /** The curl calls, in order, each with a comment line above it. */
  curl: ReadonlyArray<readonly [string, string]>;
}

async function copy(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

export function ShareBar(p: ShareProps) {
  const [open, setOpen] = useState(false);
  const [copied, setCopied] = useState("");
  const doCopy = async (what: string, text: string) => {
    setCopied((await copy(text)) ? `${what} copied` : `select the ${what} and copy it`);
    setTimeout(() => setCopied(""), 2500);
  };
  const curlText = p.curl.map(([comment, cmd]) => `# ${comment}\n${cmd}`).join("\n");
  return (
    <div class="share">
      <div class="share-buttons">
        <a class="button" href={p.url} onClick={(e) => { e.preventDefault(); void doCopy("link", p.url); }}>
          Copy link
        </a>
        <button type="button" aria-expanded={open} aria-controls="share-commands" onClick={() => setOpen(!open)}>
          {open ? "Hide CLI / curl" : "Show as CLI / curl"}
        </button>
        <span class="copied" role="status" aria-live="polite">{copied}</span>
      </div>
      {open && (
        <div id="share-commands" class="commands">
          <h3>CLI</h3>
          <pre tabIndex={0} aria-label="the CLI command"><code>{p.cli}</code></pre>
          <button type="button" onClick={() => void doCopy("command", p.cli)}>Copy command</button>
          <h3>curl</h3>
          <pre tabIndex={0} aria-label="the curl calls"><code>{curlText}</code></pre>
          <button type="button" onClick={() => void doCopy("curl calls", curlText)}>Copy curl</button>
        </div>
      )}
    </div>
  );
}
