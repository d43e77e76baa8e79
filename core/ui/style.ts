/** The few rules both pages share: readable in a host's light or dark frame, no external font. */
export const STYLE = `
:root { color-scheme: light dark; font: 14px/1.45 system-ui, sans-serif; }
body { margin: 0; padding: 12px 16px; }
h1 { font-size: 16px; margin: 0 0 8px; } h2 { font-size: 14px; margin: 12px 0 4px; }
.mono, .details li { font-family: ui-monospace, monospace; font-size: 12px; overflow-wrap: anywhere; }
.details li { font-family: inherit; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
dt { opacity: .7; } dd { margin: 0; }
ul.calls, ol.calls { padding-left: 20px; margin: 4px 0; } .call { margin: 4px 0; }
.call.unknown .title::after { content: " (not decoded)"; font-weight: normal; opacity: .7; }
.details { padding-left: 16px; margin: 2px 0; opacity: .85; }
.problems { border: 2px solid #c62828; padding: 6px 10px; margin-bottom: 10px; border-radius: 6px; }
.stage { font-size: 18px; font-weight: 600; }
button { font: inherit; padding: 6px 14px; margin: 10px 8px 0 0; border-radius: 6px; cursor: pointer; }
.note { opacity: .75; font-size: 12px; }
`
