import { useState } from "preact/hooks";
import type { Upload } from "../lib/validate";

// Where a benchmark run comes in: dropped (a file, or a folder read with
// its paths), or chosen with the file or the folder picker.

interface Props {
  files: Upload[];
  onFiles: (files: Upload[]) => void;
  error?: string;
}

/** walk reads a dropped entry's files, folders below it included. */
async function walk(e: FileSystemEntry): Promise<Upload[]> {
  if (e.isFile) {
    const f = await new Promise<File>((ok, fail) => (e as FileSystemFileEntry).file(ok, fail));
    return [{ path: e.fullPath.replace(/^\/+/, ""), file: f }];
  }
  if (e.isDirectory) {
    const reader = (e as FileSystemDirectoryEntry).createReader();
    const out: Upload[] = [];
    for (;;) {
      const batch = await new Promise<FileSystemEntry[]>((ok, fail) => reader.readEntries(ok, fail));
      if (batch.length === 0) break;
      for (const x of batch) out.push(...(await walk(x)));
    }
    return out;
  }
  return [];
}

export function DropZone(p: Props) {
  const [over, setOver] = useState(false);
  const [reading, setReading] = useState(false);
  const onDrop = async (ev: DragEvent) => {
    ev.preventDefault();
    setOver(false);
    const dt = ev.dataTransfer;
    if (!dt) return;
    setReading(true);
    try {
      const entries = [...dt.items].map((i) => i.webkitGetAsEntry()).filter((e): e is FileSystemEntry => e !== null);
      const files = entries.length ? (await Promise.all(entries.map(walk))).flat() : [...dt.files].map((f) => ({ path: f.name, file: f }));
      p.onFiles(files.sort((a, b) => a.path.localeCompare(b.path)));
    } finally {
      setReading(false);
    }
  };
  const picked = (list: FileList | null, folder: boolean) => {
    const files = [...(list ?? [])].map((f) => ({ path: folder ? f.webkitRelativePath || f.name : f.name, file: f as Blob }));
    p.onFiles(files.sort((a, b) => a.path.localeCompare(b.path)));
  };
  const size = p.files.reduce((n, f) => n + f.file.size, 0);
  return (
    <div class={"field" + (p.error ? " invalid" : "")}>
      <div
        id="file"
        class={"drop" + (over ? " over" : "")}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => void onDrop(e)}
        aria-describedby={p.error ? "file-error" : undefined}
      >
        <p>Drop a benchmark result file or a run folder here, or choose one:</p>
        <div class="pickers">
          <input id="pick-file" class="visually-hidden" type="file" onChange={(e) => picked((e.currentTarget as HTMLInputElement).files, false)} />
          <label class="button" for="pick-file">Choose a file…</label>
          <input id="pick-folder" class="visually-hidden" type="file" {...{ webkitdirectory: true }} multiple onChange={(e) => picked((e.currentTarget as HTMLInputElement).files, true)} />
          <label class="button" for="pick-folder">Choose a folder…</label>
        </div>
        <p role="status" aria-live="polite" id="files-status">
          {reading
            ? "Reading the folder…"
            : p.files.length === 0
              ? "No run chosen."
              : p.files.length === 1
                ? `${p.files[0].path} (${(size / 1024).toFixed(1)} KiB)`
                : `${p.files.length} files, ${(size / 1024).toFixed(1)} KiB: ${p.files
                    .slice(0, 4)
                    .map((f) => f.path)
                    .join(", ")}${p.files.length > 4 ? ", …" : ""}`}
        </p>
      </div>
      {p.error && <small id="file-error" class="error" role="alert">{p.error}</small>}
    </div>
  );
}
