import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { onUnauthorized, setToken, token } from "./lib/api";
import { pageOf, pages, type Page } from "./lib/route";
import { PlanPage } from "./pages/Plan";
import { WhatIfPage } from "./pages/WhatIf";
import { ValidatePage } from "./pages/Validate";
import { StepPage } from "./pages/Step";
import "./style.css";

// The shell: the page links, the token form (shown when the server answers
// 401), and the page of the current path.

function TokenForm(p: { onDone: () => void }) {
  const [value, setValue] = useState(token());
  return (
    <form
      class="token"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(value.trim());
        p.onDone();
      }}
    >
      <p>
        This server wants its bearer token (<code>auth_token</code>). It is kept for this tab only and sent as
        <code> Authorization: Bearer …</code> with each API call.
      </p>
      <label for="token">Bearer token</label>
      <input id="token" type="password" autoComplete="off" value={value} onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} />
      <button type="submit">Use this token</button>
    </form>
  );
}

const lastSearch: Partial<Record<Page, string>> = {};

function App() {
  const [page, setPage] = useState<Page>(pageOf(location.pathname));
  const [needToken, setNeedToken] = useState(false);
  const [generation, setGeneration] = useState(0);
  useEffect(() => onUnauthorized(() => setNeedToken(true)), []);
  useEffect(() => {
    const pop = () => setPage(pageOf(location.pathname));
    addEventListener("popstate", pop);
    return () => removeEventListener("popstate", pop);
  }, []);
  const go = (e: MouseEvent, p: Page, path: string) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    if (p !== page) {
      // Each page comes back with the inputs it was left with.
      lastSearch[page] = location.search;
      history.pushState(null, "", path + (lastSearch[p] ?? ""));
      setPage(p);
    }
  };
  useEffect(() => {
    document.title = `${pages.find((x) => x.page === page)!.title} · Headroom planner`;
  }, [page]);
  return (
    <>
      <a class="skip" href="#main">Skip to the page</a>
      <header>
        <span class="brand">Headroom</span>
        <nav aria-label="pages">
          {pages.map((p) => (
            <a key={p.page} href={p.path} aria-current={p.page === page ? "page" : undefined} onClick={(e) => go(e, p.page, p.path)}>
              {p.title}
            </a>
          ))}
        </nav>
        <a class="docs" href="/docs">API</a>
      </header>
      {needToken && (
        <TokenForm
          onDone={() => {
            setNeedToken(false);
            setGeneration(generation + 1);
          }}
        />
      )}
      <main id="main" tabIndex={-1} key={page + ":" + generation}>
        {page === "plan" && <PlanPage />}
        {page === "whatif" && <WhatIfPage />}
        {page === "validate" && <ValidatePage />}
        {page === "step" && <StepPage />}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
