/**
 * The dashboard's one stylesheet, served by our own route (`GET /dashboard/assets/dashboard.css`): no font
 * or asset from outside the machine, and the CSP forbids inline styles, so every page links this. Kept
 * as a string in a module so the build carries it with the code (tsc copies no .css).
 */
export const DASHBOARD_CSS = `
:root { --fg: #1d2330; --muted: #667085; --line: #d9dee7; --bg: #f6f7f9; --card: #fff; --accent: #2f5fd0; --danger: #b42318; --ok: #067647;
  --s1: #2f5fd0; --s2: #7a5af8; --s3: #f79009; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); font-size: 14px; line-height: 1.45; }
header.top { display: flex; justify-content: space-between; align-items: center; padding: 10px 24px; background: #111827; color: #fff; }
header.top a { color: #fff; text-decoration: none; font-weight: 600; }
header.top .who { color: #cbd5e1; }
header.top nav.who a { color: #e2e8f0; font-weight: 400; }
form.inline { display: inline; margin: 0; }
button.link { background: none; border: none; padding: 0; color: var(--accent); text-decoration: underline; cursor: pointer; }
header.top button.link { color: #e2e8f0; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 12px 0 14px; }
h2 { font-size: 16px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 16px 0 8px; }
a { color: var(--accent); }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; background: #eef1f6; padding: 1px 4px; border-radius: 3px; word-break: break-all; }
small, .muted { color: var(--muted); }
code.prefix { white-space: nowrap; word-break: normal; }
nav.crumbs { color: var(--muted); margin-bottom: 8px; }
nav.crumbs .role { margin-left: 8px; padding: 1px 8px; border-radius: 10px; background: #e0e7ff; color: #3730a3; font-size: 12px; }
nav.tabs { display: flex; gap: 4px; border-bottom: 1px solid var(--line); margin-bottom: 8px; flex-wrap: wrap; }
nav.tabs a { padding: 8px 12px; text-decoration: none; color: var(--fg); border-bottom: 2px solid transparent; }
nav.tabs a.current { border-bottom-color: var(--accent); color: var(--accent); font-weight: 600; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin: 14px 0; }
.card.narrow { max-width: 30rem; margin-left: auto; margin-right: auto; }
table { width: 100%; border-collapse: collapse; background: var(--card); margin: 8px 0; }
th, td { text-align: left; padding: 7px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #fafbfc; }
td.actions, div.actions { white-space: nowrap; }
td.actions form, div.actions form { display: inline-block; margin: 0 4px 4px 0; }
td.excerpt q { display: block; max-width: 420px; white-space: pre-wrap; word-break: break-word; }
button, a.button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; display: inline-block; }
button.danger { background: #fff; color: var(--danger); border-color: var(--danger); }
a.button { background: #fff; color: var(--accent); }
form.stacked label { display: block; margin: 8px 0; }
form.stacked label.inline, label.inline { display: inline-flex; align-items: center; gap: 4px; margin: 4px 14px 4px 0; }
form.stacked input:not([type=checkbox]):not([type=radio]), form.stacked select, form.stacked textarea { display: block; width: 100%; max-width: 520px; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; font: inherit; margin-top: 3px; }
form.stacked .row { display: flex; gap: 16px; flex-wrap: wrap; align-items: flex-end; }
form.stacked .row label { flex: 0 1 240px; }
form.stacked .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 4px 18px; }
form.stacked label.reset { display: inline-flex; gap: 4px; font-size: 12px; color: var(--muted); margin: 2px 0 0; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; padding: 6px 12px 8px; }
legend { color: var(--muted); font-size: 12px; padding: 0 4px; }
.columns { columns: 3 220px; }
form.reject input { width: 150px; padding: 5px 6px; border: 1px solid var(--line); border-radius: 6px; font: inherit; }
.notice { padding: 10px 14px; border-radius: 6px; margin: 10px 0; }
.notice.ok { background: #ecfdf3; border: 1px solid #abefc6; color: var(--ok); }
.notice.error { background: #fef3f2; border: 1px solid #fecdca; color: var(--danger); }
.notice .field { font-family: ui-monospace, monospace; font-size: 12px; }
.secret { background: #fffaeb; border: 1px solid #fedf89; border-radius: 8px; padding: 12px 16px; margin: 12px 0; }
.secret code.value { display: block; font-size: 14px; padding: 8px; background: #fff; border: 1px dashed #f79009; user-select: all; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; background: #eef1f6; }
.status.active, .status.delivered, .status.accepted { background: #dcfae6; color: var(--ok); }
.status.revoked, .status.expired, .status.failed, .status.rejected { background: #fee4e2; color: var(--danger); }
.status.pending { background: #fef0c7; color: #93370d; }
dl.counts { display: flex; gap: 12px; flex-wrap: wrap; margin: 8px 0; }
dl.counts div { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 110px; }
dl.counts dt { font-size: 12px; color: var(--muted); }
dl.counts dd { margin: 0; font-size: 20px; font-weight: 600; }
figure.chart { margin: 8px 0 18px; }
figure.chart figcaption { font-weight: 600; margin-bottom: 4px; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .axis { fill: var(--muted); font-size: 11px; }
svg .s1, .key.s1 { fill: var(--s1); background: var(--s1); }
svg .s2, .key.s2 { fill: var(--s2); background: var(--s2); }
svg .s3, .key.s3 { fill: var(--s3); background: var(--s3); }
.legend .key { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; border-radius: 2px; }
.test-result.ok { border-color: #abefc6; }
.test-result.error { border-color: #fecdca; }
article.approval h3 { margin-top: 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 8px 0; }
dl.facts dt { color: var(--muted); font-size: 12px; }
dl.facts dd { margin: 0; }
details.folded summary { cursor: pointer; color: var(--accent); }
.signin .providers ul { list-style: none; padding: 0; }
.signin .providers li { margin: 6px 0; }
.signin p.or { color: var(--muted); text-align: center; margin: 14px 0 6px; }
.small { font-size: 12px; }
pre { white-space: pre-wrap; word-break: break-word; background: #f3f4f6; padding: 8px; border-radius: 6px; }
form.filters { display: flex; gap: 12px; flex-wrap: wrap; align-items: end; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
form.filters select, form.filters input { padding: 5px 6px; border: 1px solid var(--line); border-radius: 6px; font: inherit; }
dl.detail { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 8px 16px; margin: 0; }
dl.detail dt { font-size: 12px; color: var(--muted); }
dl.detail dd { margin: 0; word-break: break-word; }
.status.completed, .status.up { background: #dcfae6; color: var(--ok); }
.status.error, .status.timeout, .status.down { background: #fee4e2; color: var(--danger); }
ul.servers { list-style: none; margin: 0; padding: 0; }
td.money { font-variant-numeric: tabular-nums; }
.pager a { margin-right: 12px; }
`;
