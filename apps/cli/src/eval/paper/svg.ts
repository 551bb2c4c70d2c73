/**
 * Hand-written SVG line charts for the §7.7 plots (no dependency): one
 * polyline and labelled points per series, linear axes with five ticks,
 * a legend. Every data point is a `<circle>` carrying `data-x`/`data-y`, so
 * the numbers can be read back from the file.
 */

export interface Series {
  name: string;
  points: { x: number; y: number; label?: string }[];
}

export interface Chart {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** Fixed y range (e.g. 0..1 for rates); default the data's. */
  yRange?: [number, number];
}

const WIDTH = 720;
const HEIGHT = 440;
const MARGIN = { left: 70, right: 190, top: 40, bottom: 60 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

const fmt = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(1) : n.toFixed(2));

function range(values: number[], fixed?: [number, number]): [number, number] {
  if (fixed) return fixed;
  if (values.length === 0) return [0, 1];
  const low = Math.min(...values);
  const high = Math.max(...values);
  return low === high ? [low - 1, high + 1] : [low, high];
}

export function lineChart(chart: Chart): string {
  const points = chart.series.flatMap((s) => s.points);
  const [x0, x1] = range(points.map((p) => p.x));
  const [y0, y1] = range(
    points.map((p) => p.y),
    chart.yRange,
  );
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const sx = (x: number) => MARGIN.left + ((x - x0) / (x1 - x0)) * plotW;
  const sy = (y: number) => MARGIN.top + plotH - ((y - y0) / (y1 - y0)) * plotH;
  const out: string[] = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(chart.title)}</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(chart.title)}</text>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" stroke="#000"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" stroke="#000"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const x = x0 + ((x1 - x0) * i) / 4;
    const y = y0 + ((y1 - y0) * i) / 4;
    out.push(
      `<text x="${sx(x).toFixed(1)}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${fmt(x)}</text>`,
      `<text x="${MARGIN.left - 8}" y="${(sy(y) + 4).toFixed(1)}" text-anchor="end">${fmt(y)}</text>`,
      `<line x1="${MARGIN.left}" y1="${sy(y).toFixed(1)}" x2="${MARGIN.left + plotW}" y2="${sy(y).toFixed(1)}" stroke="#eee"/>`,
    );
  }
  out.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 18}" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`,
    `<text x="18" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 18 ${MARGIN.top + plotH / 2})">${escapeXml(chart.yLabel)}</text>`,
  );
  chart.series.forEach((series, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const sorted = [...series.points].sort((a, b) => a.x - b.x);
    out.push(`<g data-series="${escapeXml(series.name)}">`);
    if (sorted.length > 1)
      out.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${sorted.map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ')}"/>`,
      );
    for (const p of sorted)
      out.push(
        `<circle cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="4" fill="${colour}" data-x="${p.x}" data-y="${p.y}">` +
          `<title>${escapeXml(`${series.name}${p.label ? ` ${p.label}` : ''}: (${fmt(p.x)}, ${fmt(p.y)})`)}</title></circle>`,
      );
    out.push(`</g>`);
    const ly = MARGIN.top + 10 + i * 20;
    out.push(
      `<rect x="${WIDTH - MARGIN.right + 20}" y="${ly - 9}" width="12" height="12" fill="${colour}"/>`,
      `<text x="${WIDTH - MARGIN.right + 38}" y="${ly + 1}">${escapeXml(series.name)}</text>`,
    );
  });
  out.push(`</svg>`);
  return `${out.join('\n')}\n`;
}
