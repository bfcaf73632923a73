// The pages and their paths: each view is a path with its inputs in the
// query string (/plan?model=…), and "/" is the Plan view.

export type Page = "plan" | "whatif" | "validate" | "step";

export const pages: ReadonlyArray<{ page: Page; path: string; title: string }> = [
  { page: "plan", path: "/plan", title: "Plan" },
  { page: "whatif", path: "/whatif", title: "What-if" },
  { page: "validate", path: "/validate", title: "Validate" },
  { page: "step", path: "/step", title: "Step" },
];

/** pageOf is the page a path shows ("/" and unknown paths: plan). */
export function pageOf(path: string): Page {
  const p = pages.find((x) => x.path === path.replace(/\/+$/, ""));
  return p ? p.page : "plan";
}

/** pathOf is a page's path. */
export function pathOf(page: Page): string {
  return pages.find((x) => x.page === page)!.path;
}
