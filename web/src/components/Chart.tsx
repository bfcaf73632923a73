import { useEffect, useRef } from "preact/hooks";

// A chart drawn by a function into its own box (Observable Plot returns an
// SVG or a figure), redrawn when its data or the box's width changes, with
// a caption that says what it shows.

interface ChartProps {
  id: string;
  caption: string;
  /** draw makes the chart for a width in CSS pixels. */
  draw: (width: number) => Element;
  /** deps: redraw when these change. */
  deps: unknown[];
}

export function Chart(p: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let last = -1;
    const paint = () => {
      const w = Math.max(280, Math.floor(el.clientWidth));
      if (w === last) return;
      last = w;
      el.replaceChildren(p.draw(w));
    };
    paint();
    const ro = new ResizeObserver(paint);
    ro.observe(el);
    return () => ro.disconnect();
  }, p.deps);
  return (
    <figure class="chart" id={p.id}>
      <div ref={box} class="chart-box" role="img" aria-label={p.caption} />
      <figcaption>{p.caption}</figcaption>
    </figure>
  );
}
