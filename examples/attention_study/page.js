// The attention-study page: draws the data embedded in <script id="data"> (report_data.h) on
// canvases. No network, no libraries. Arrays arrive as base64 little-endian float32, masks as
// base64 bits (least significant first), all row-major [batch, heads, seq_q, seq_k] (masks
// [batch, seq_q, seq_k]).
'use strict';

const D = JSON.parse(document.getElementById('data').textContent);

function bytes(b64) {
  const s = atob(b64), out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; ++i) out[i] = s.charCodeAt(i);
  return out;
}
const floats = b64 => new Float32Array(bytes(b64).buffer);
function bits(b64, n) {
  const packed = bytes(b64), out = new Uint8Array(n);
  for (let i = 0; i < n; ++i) out[i] = (packed[i >> 3] >> (i & 7)) & 1;
  return out;
}
for (const c of D.calls) {
  c.mask = bits(c.mask, c.batch * c.seq_q * c.seq_k);
  for (const q of ['A', 'S', 'dA', 'dS']) c[q] = floats(c[q]);
}
for (const s of D.snapshots) s.calls = s.calls.map(c => ({A: floats(c.A), dA: floats(c.dA)}));
for (const a of D.attributions) a.values = floats(a.values);
if (D.cells) for (const q of ['exact', 'atp']) D.cells[q] = floats(D.cells[q]);

const QUANTITY = {
  A: {label: 'A (weights)', diverging: false},
  S: {label: 'S (scores)', diverging: true},
  dA: {label: 'dL/dA', diverging: true},
  dS: {label: 'dL/dS', diverging: true},
};
const PERCENTILE = D.percentile;  // the diverging limit: this percentile of |values|
// Gradients span many decades: after training, a sequence the model gets right has dL/dS 10^3
// times smaller than one it gets wrong, and on a linear scale shared by the batch its maps are
// white. The log scale shows LOG_DECADES decades of |value| below the limit.
const LOG_DECADES = 4;
const isGradient = quantity => quantity === 'dA' || quantity === 'dS';
const headName = (call, h) => call.name + ' h' + h;  // the C++ head_name
const state = {seq: 0, perMap: false, logGradients: true, snapshot: D.snapshots.length, head: null, cellView: 'exact'};

// ---- colour ---------------------------------------------------------------------------------
const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
                 [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
const RDBU = [[33, 102, 172], [67, 147, 195], [146, 197, 222], [209, 229, 240], [247, 247, 247],
              [253, 219, 199], [244, 165, 130], [214, 96, 77], [178, 24, 43]];
const MASKED = [200, 200, 200];
function ramp(stops, t) {
  t = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(t)), f = t - i;
  return stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
}
// scale: {lo, hi, diverging, log}; values beyond the ends take the end colour. A log scale
// (diverging only, lo = -hi) places v at sign(v) log(1 + |v|/c) with c = hi / 10^LOG_DECADES.
function position(scale, v) {
  if (!scale.log) return (v - scale.lo) / (scale.hi - scale.lo || 1);
  const c = scale.hi / 10 ** LOG_DECADES;
  return 0.5 + 0.5 * Math.sign(v) * Math.log1p(Math.abs(v) / c) / Math.log1p(scale.hi / c);
}
const colour = (scale, v) => ramp(scale.diverging ? RDBU : VIRIDIS, position(scale, v));

function percentileAbs(values, p) {
  if (!values.length) return 0;
  const a = Float64Array.from(values, Math.abs).sort();
  return a[Math.min(a.length - 1, Math.floor(p / 100 * a.length))];
}
// The scale of a set of may-attend values of one quantity: A from 0 to the largest weight,
// the others symmetric around 0 at the percentile of |value|.
function scaleOf(quantity, values) {
  // A loop, not Math.max(...values): spreading 10^5 values overflows the call stack.
  if (!QUANTITY[quantity].diverging) return {lo: 0, hi: values.reduce((a, v) => Math.max(a, v), 1e-30), diverging: false};
  const lim = Math.max(1e-30, percentileAbs(values, PERCENTILE));
  return {lo: -lim, hi: lim, diverging: true, log: state.logGradients && isGradient(quantity)};
}

// ---- data access ----------------------------------------------------------------------------
// The page holds A and dL/dA of each snapshot, not S and dL/dS (they would double its size;
// snapshots.safetensors has them): at a snapshot's step those two are unavailable, never shown
// from another step beside its A.
const chosenSnapshot = () => state.snapshot < D.snapshots.length ? D.snapshots[state.snapshot] : null;
const inSnapshots = quantity => quantity === 'A' || quantity === 'dA';
// '' when the quantity can be drawn, else why not.
function unavailable(quantity) {
  const snap = chosenSnapshot();
  return snap && !inSnapshots(quantity)
    ? `${QUANTITY[quantity].label} at step ${snap.step} is not in the page (snapshots.safetensors holds it); the slider's last position shows the study's.`
    : '';
}
const unavailableNote = quantity => el('p', {class: 'note unavailable', 'data-quantity': quantity}, unavailable(quantity));
// The array of a quantity for call index ci: from the chosen snapshot, when any (not for a
// quantity unavailable() refuses).
function arrayOf(ci, quantity) {
  const snap = chosenSnapshot();
  return snap ? snap.calls[ci][quantity] : D.calls[ci][quantity];
}
// One map: value(i, j), masked(i, j), for (call, head, sequence).
function mapOf(ci, h, b, quantity) {
  const c = D.calls[ci], arr = arrayOf(ci, quantity), q = c.seq_q, k = c.seq_k;
  const base = ((b * c.heads + h) * q) * k, mbase = b * q * k;
  return {rows: q, cols: k, value: (i, j) => arr[base + i * k + j], masked: (i, j) => !c.mask[mbase + i * k + j]};
}
function mayAttendValues(m) {
  const out = [];
  for (let i = 0; i < m.rows; ++i) for (let j = 0; j < m.cols; ++j) if (!m.masked(i, j)) out.push(m.value(i, j));
  return out;
}
const sharedScales = new Map();  // quantity + snapshot + log -> scale over every call, head, sequence
function sharedScale(quantity) {
  const key = quantity + (inSnapshots(quantity) ? state.snapshot : '') + state.logGradients;
  if (!sharedScales.has(key)) {
    const values = [];
    D.calls.forEach((c, ci) => {
      for (let b = 0; b < c.batch; ++b)
        for (let h = 0; h < c.heads; ++h) for (const v of mayAttendValues(mapOf(ci, h, b, quantity))) values.push(v);
    });
    sharedScales.set(key, scaleOf(quantity, values));
  }
  return sharedScales.get(key);
}
const scaleFor = (m, quantity) => state.perMap ? scaleOf(quantity, mayAttendValues(m)) : sharedScale(quantity);

// ---- drawing --------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}
function fmt(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e-3 && a < 1e4 ? String(Number(v.toPrecision(3))) : v.toExponential(2);
}
// A map at one pixel per cell, for thumbnails (the CSS scales it up without smoothing).
function drawThumbnail(canvas, m, scale) {
  canvas.width = m.cols;
  canvas.height = m.rows;
  const ctx = canvas.getContext('2d'), img = ctx.createImageData(m.cols, m.rows);
  for (let i = 0; i < m.rows; ++i)
    for (let j = 0; j < m.cols; ++j) {
      const c = m.masked(i, j) ? MASKED : colour(scale, m.value(i, j)), p = 4 * (i * m.cols + j);
      img.data.set([c[0], c[1], c[2], 255], p);
    }
  ctx.putImageData(img, 0, 0);
}
// Detail maps are about 300 px wide, attribution maps 180 (cells of at least 3 px).
const FONT = '11px sans-serif', LABEL_HEIGHT = 13, TARGET = 300, SMALL = 180;
const cellSize = (m, target) => Math.max(3, Math.floor(target / Math.max(m.rows, m.cols)));
// Every k-th label, k the smallest step at which neighbouring labels do not overlap.
const labelStep = (cell, extent) => Math.max(1, Math.ceil((extent + 3) / cell));
// A labelled heatmap; returns its geometry for the mouse: {x0, y0, cell, rows, cols}.
function drawHeatmap(canvas, m, scale, rowLabels, colLabels, target) {
  const ctx = canvas.getContext('2d');
  ctx.font = FONT;
  const widest = labels => Math.max(...labels.map(t => ctx.measureText(t).width));
  const cell = cellSize(m, target);
  const x0 = Math.ceil(widest(rowLabels)) + 8, y0 = LABEL_HEIGHT + 6;
  canvas.width = x0 + cell * m.cols + 4;
  canvas.height = y0 + cell * m.rows + 4;
  ctx.font = FONT;
  const img = ctx.createImageData(cell * m.cols, cell * m.rows);
  for (let i = 0; i < m.rows; ++i)
    for (let j = 0; j < m.cols; ++j) {
      const c = m.masked(i, j) ? MASKED : colour(scale, m.value(i, j));
      for (let y = i * cell; y < (i + 1) * cell; ++y)
        for (let x = j * cell; x < (j + 1) * cell; ++x) img.data.set([c[0], c[1], c[2], 255], 4 * (y * cell * m.cols + x));
    }
  ctx.putImageData(img, x0, y0);
  ctx.fillStyle = '#222';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  const rstep = labelStep(cell, LABEL_HEIGHT - 2);
  for (let i = 0; i < m.rows; i += rstep) ctx.fillText(rowLabels[i], x0 - 4, y0 + (i + 0.5) * cell);
  ctx.textAlign = 'center';
  const cstep = labelStep(cell, widest(colLabels));
  for (let j = 0; j < m.cols; j += cstep) ctx.fillText(colLabels[j], x0 + (j + 0.5) * cell, LABEL_HEIGHT / 2 + 2);
  return {x0, y0, cell, rows: m.rows, cols: m.cols};
}
// The cell [i, j] of drawHeatmap's geometry g under a mouse event on its canvas, null outside.
function cellUnderMouse(canvas, g, e) {
  const r = canvas.getBoundingClientRect();
  const x = (e.clientX - r.left) * canvas.width / r.width - g.x0, y = (e.clientY - r.top) * canvas.height / r.height - g.y0;
  const i = Math.floor(y / g.cell), j = Math.floor(x / g.cell);
  return i < 0 || j < 0 || i >= g.rows || j >= g.cols ? null : [i, j];
}
// The self-test's hover: moves the mouse over the middle of cell (i, j) of a rows x cols heatmap
// drawn at `target`, found from the canvas's size (the map ends 4 px from its right and bottom
// edges), not from what drawHeatmap returned.
function hoverCell(canvas, rows, cols, target, i, j) {
  const cell = cellSize({rows, cols}, target), x0 = canvas.width - 4 - cell * cols, y0 = canvas.height - 4 - cell * rows;
  const r = canvas.getBoundingClientRect();
  canvas.dispatchEvent(new MouseEvent('mousemove', {bubbles: true,
    clientX: r.left + (x0 + (j + 0.5) * cell) * r.width / canvas.width,
    clientY: r.top + (y0 + (i + 0.5) * cell) * r.height / canvas.height}));
}
// The bar's ticks sit evenly spaced: on the log scale, +-hi/100 falls a quarter of the way from
// 0 to each end (log(1 + 10^2) / log(1 + 10^4) = 0.501).
function colourBar(scale, note) {
  const w = 220, canvas = el('canvas', {width: w, height: 12, class: 'bar'}), ctx = canvas.getContext('2d');
  for (let x = 0; x < w; ++x) {
    const c = ramp(scale.diverging ? RDBU : VIRIDIS, (x + 0.5) / w);
    ctx.fillStyle = `rgb(${c})`;
    ctx.fillRect(x, 0, 1, 12);
  }
  const values = scale.log ? [scale.lo, scale.lo / 100, 0, scale.hi / 100, scale.hi]
                           : [scale.lo, (scale.lo + scale.hi) / 2, scale.hi];
  const ticks = el('div', {class: 'ticks'}, ...values.map(v => el('span', {}, fmt(v))));
  return el('div', {class: 'colourbar'}, canvas, ticks, el('div', {class: 'note'}, note));
}
function scaleNote(quantity) {
  if (state.perMap) return 'per map: each map has its own scale (the bar shows the shared one)';
  if (!QUANTITY[quantity].diverging) return 'shared by every head: 0 to the largest weight of all heads and sequences';
  const note = `shared by every head: symmetric around 0, limit = ${PERCENTILE}th percentile of |${quantity === 'S' ? 'S' : QUANTITY[quantity].label}| over may-attend cells of all heads and sequences`;
  return isGradient(quantity) && state.logGradients
    ? note + `; log scale: ${LOG_DECADES} decades of |value| below the limit`
    : note;
}

// ---- overview -------------------------------------------------------------------------------
function overviewGrid(quantity) {
  const title = el('h3', {}, QUANTITY[quantity].label);
  if (unavailable(quantity)) return el('div', {class: 'overview-part'}, title, unavailableNote(quantity));
  const table = el('table', {class: 'grid'});
  const heads = Math.max(...D.calls.map(c => c.heads));
  const header = el('tr', {}, el('th', {}, ''));
  for (let h = 0; h < heads; ++h) header.append(el('th', {}, 'h' + h));
  table.append(header);
  D.calls.forEach((c, ci) => {
    const row = el('tr', {}, el('th', {class: 'rowname'}, c.name));
    for (let h = 0; h < c.heads; ++h) {
      const m = mapOf(ci, h, state.seq, quantity), canvas = el('canvas', {class: 'thumb', 'data-head': headName(c, h),
                                                                      title: headName(c, h) + ': click for detail'});
      drawThumbnail(canvas, m, scaleFor(m, quantity));
      canvas.addEventListener('click', () => openDetail(ci, h));
      if (state.head && state.head[0] === ci && state.head[1] === h) canvas.classList.add('chosen');
      row.append(el('td', {}, canvas));
    }
    table.append(row);
  });
  return el('div', {class: 'overview-part'}, title, colourBar(sharedScale(quantity), scaleNote(quantity)), table);
}
function drawOverview() {
  const box = document.getElementById('overview');
  box.replaceChildren(overviewGrid('A'), overviewGrid('dS'));
}

// ---- detail ---------------------------------------------------------------------------------
const tokens = (list, b) => list[b].map(String);
function showReadout(text, value) {
  document.getElementById('readout').textContent = text;
  document.getElementById('readout-value').textContent = value;
}
// What the readout says before the mouse is over a map, and again after the maps were redrawn (its
// value was another sequence's, step's or scale's).
const READOUT_HINT = document.getElementById('readout').textContent;
const clearReadout = () => showReadout(READOUT_HINT, '');
function openDetail(ci, h) {
  state.head = [ci, h];
  const c = D.calls[ci], box = document.getElementById('detail');
  const snap = chosenSnapshot() ? ` (A and dL/dA at step ${chosenSnapshot().step})` : '';
  box.replaceChildren(el('h2', {}, `${headName(c, h)}: ${c.module}, sequence ${state.seq}${snap}`));
  const panels = el('div', {class: 'panels'});
  for (const quantity of ['A', 'S', 'dA', 'dS']) {
    if (unavailable(quantity)) {
      panels.append(el('figure', {}, el('figcaption', {}, QUANTITY[quantity].label), unavailableNote(quantity)));
      continue;
    }
    const m = mapOf(ci, h, state.seq, quantity), scale = scaleFor(m, quantity);
    const canvas = el('canvas', {class: 'detail', 'data-quantity': quantity});
    const rows = tokens(c.query_tokens, state.seq), cols = tokens(c.key_tokens, state.seq);
    const g = drawHeatmap(canvas, m, scale, rows, cols, TARGET);
    canvas.addEventListener('mousemove', e => {
      const at = cellUnderMouse(canvas, g, e);
      if (!at) return;
      const [i, j] = at, v = m.masked(i, j) ? 'masked' : String(m.value(i, j));
      showReadout(`${headName(c, h)} ${QUANTITY[quantity].label}, sequence ${state.seq}: query ${i} (token ${rows[i]}), key ${j} (token ${cols[j]}) =`, v);
    });
    panels.append(el('figure', {}, el('figcaption', {}, QUANTITY[quantity].label), canvas,
                     colourBar(scale, state.perMap ? 'this map' : 'shared')));
  }
  box.append(panels, el('p', {class: 'hint'}, 'Rows: query tokens, columns: key tokens (labels thinned to every k-th when the sequence is long); grey: masked.'));
  drawOverview();
}

// ---- attribution maps, tables, loss ---------------------------------------------------------
function drawAttributions() {
  const box = document.getElementById('attributions');
  box.replaceChildren();
  for (const a of D.attributions) {
    const n = a.seq, b = state.seq, base = b * n * n;
    const m = {rows: n, cols: n, value: (i, j) => a.values[base + i * n + j], masked: () => false};
    const scale = scaleOf('A', mayAttendValues(m)), canvas = el('canvas', {class: 'attribution'});
    drawHeatmap(canvas, m, scale, tokens(a.tokens, b), tokens(a.tokens, b), SMALL);
    box.append(el('figure', {}, el('figcaption', {}, a.name), canvas, colourBar(scale, 'this map'), el('p', {class: 'note'}, a.description)));
  }
}
function sortable(t) {
  const table = el('table', {class: 'sortable', id: 'table-' + t.id});
  const head = el('tr');
  t.header.forEach((h, col) => {
    const th = el('th', {title: 'click to sort'}, h);
    th.addEventListener('click', () => {
      const asc = th.dataset.order !== 'asc';
      const num = t.rows.every(r => r[col] !== '' && !isNaN(Number(r[col])));
      t.rows.sort((a, b) => (num ? Number(a[col]) - Number(b[col]) : a[col].localeCompare(b[col])) * (asc ? 1 : -1));
      fill();
      head.querySelectorAll('th').forEach(x => delete x.dataset.order);
      th.dataset.order = asc ? 'asc' : 'desc';
    });
    head.append(th);
  });
  // A heat table colours the numbers of its columns from heat_from on, on one blue-white-red scale:
  // 0 white, the limit the largest |number| there.
  const hot = (v, col) => t.heat_from >= 0 && col >= t.heat_from && v !== '' && !isNaN(Number(v));
  const limit = Math.max(0, ...t.rows.flatMap(r => r.filter(hot).map(v => Math.abs(Number(v)))));
  const heat = {lo: -limit, hi: limit, diverging: true, log: false};
  const cell = (v, col) => {
    const td = el('td', {}, v);
    if (hot(v, col)) td.style.background = `rgb(${colour(heat, Number(v)).join(',')})`;
    return td;
  };
  const fill = () => table.replaceChildren(head, ...t.rows.map(r => el('tr', {}, ...r.map(cell))));
  fill();
  return el('section', {}, el('h3', {}, t.title), el('p', {class: 'note'}, t.caption), table);
}
// An empty SVG of W x H and add(tag, attrs, text), which appends an element to it.
function svgOf(W, H) {
  const ns = 'http://www.w3.org/2000/svg', svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', W);
  svg.setAttribute('height', H);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  return {svg, add};
}
// The circuit table's methods against exact patching: one scatter per method, a point per row
// (x: the exact share, y: the method's), the diagonal where a method is exact.
function drawCircuitScatters() {
  const t = D.tables.find(x => x.id === 'circuit');
  const box = document.getElementById('circuit-scatters');
  if (!t) return;
  const exactCol = t.header.indexOf('exact'), W = 230, H = 230, pad = 34;
  const values = t.rows.flatMap(r => r.slice(exactCol).map(Number)).filter(Number.isFinite);
  const lo = Math.min(0, ...values), hi = Math.max(...values.map(Math.abs), 1e-12);
  const X = v => pad + (W - 2 * pad) * (v - lo) / (hi - lo), Y = v => H - pad - (H - 2 * pad) * (v - lo) / (hi - lo);
  const figures = t.header.slice(exactCol + 1).map((method, k) => {
    const {svg, add} = svgOf(W, H);
    svg.setAttribute('class', 'scatter');
    svg.dataset.method = method;
    add('rect', {x: pad, y: pad, width: W - 2 * pad, height: H - 2 * pad, fill: 'none', stroke: '#bbb'});
    add('line', {x1: X(lo), y1: Y(lo), x2: X(hi), y2: Y(hi), stroke: '#999', 'stroke-dasharray': '4 3'});
    add('text', {x: W / 2, y: H - 8, 'text-anchor': 'middle', 'font-size': 11}, 'exact share');
    add('text', {x: 10, y: H / 2, 'font-size': 11, transform: `rotate(-90 10 ${H / 2})`, 'text-anchor': 'middle'}, 'estimate');
    for (const r of t.rows) {
      const x = Number(r[exactCol]), y = Number(r[exactCol + 1 + k]);
      if (Number.isFinite(x) && Number.isFinite(y)) add('circle', {cx: X(x), cy: Y(y), r: 2.5, fill: '#2166ac'}).append(
        Object.assign(document.createElementNS('http://www.w3.org/2000/svg', 'title'), {textContent: `${r[0]}: exact ${r[exactCol]}, estimate ${r[exactCol + 1 + k]}`}));
    }
    return el('figure', {}, el('figcaption', {}, method), svg);
  });
  box.replaceChildren(el('h3', {}, "Which heads carry the copy: each method's share against the exact one"),
    el('div', {class: 'panels'}, ...figures),
    el('p', {class: 'note'}, 'One point per row of the circuit table below; on the dashed diagonal a method equals exact patching. Hover a point for its row.'));
}
// The circuit as a graph, from the edges table: a column per block of senders in forward order
// (an embedding, one attention module's heads, a feed-forward sublayer), the decoder's output
// last; the edges largest in |exact share| (at least kEdgeShare, at most kEdgesDrawn) drawn from
// the sender to the receiving module's q, k or v input, red when patching the edge moves the metric
// towards the clean run, blue when away, as wide as the share.
const kEdgeShare = 0.02, kEdgesDrawn = 40;
function drawEdgeGraph() {
  const t = D.tables.find(x => x.id === 'edges');
  const box = document.getElementById('edge-graph');
  if (!t) return;
  const exactCol = t.header.indexOf('exact');
  const senderBlock = name => name.replace(/ h\d+$/, ''), receiverBlock = name => name.replace(/ [qkv]$/, '');
  const columns = [], members = {};
  const addBlock = b => { if (!members[b]) { members[b] = []; columns.push(b); } };
  for (const r of t.rows) {
    addBlock(senderBlock(r[0]));
    if (!members[senderBlock(r[0])].includes(r[0])) members[senderBlock(r[0])].push(r[0]);
  }
  for (const r of t.rows) addBlock(receiverBlock(r[1]));
  const colW = 74, rowH = 20, left = 30, top = 56, tallest = Math.max(1, ...columns.map(b => members[b].length));
  // A long edge sags below the columns it passes, by a share of its length, so it stays apart from them.
  const x = b => left + colW * columns.indexOf(b) + colW / 2;
  const height = b => rowH * Math.max(1, members[b].length);
  const nodeY = (b, name) => top + rowH * (Math.max(0, members[b].indexOf(name)) + 0.5);
  const portY = (b, port) => top + height(b) * ({q: 1, k: 3, v: 5}[port] || 3) / 6;
  const shown = t.rows.filter(r => Math.abs(Number(r[exactCol])) >= kEdgeShare)
    .sort((a, b) => Math.abs(Number(b[exactCol])) - Math.abs(Number(a[exactCol]))).slice(0, kEdgesDrawn);
  const widest = Math.max(1e-12, ...shown.map(r => Math.abs(Number(r[exactCol]))));
  // A long edge sags below the columns it passes, by a share of its length (a cubic's middle
  // drops by 3/4 of its control points'), so it stays apart from them.
  const sagPerPixel = 0.18, longest = Math.max(0, ...shown.map(r => x(receiverBlock(r[1])) - x(senderBlock(r[0]))));
  const W = left + colW * columns.length + 40, H = top + rowH * tallest + 0.75 * sagPerPixel * longest + 24;
  const {svg, add} = svgOf(W, H);
  svg.setAttribute('class', 'edge-graph');
  for (const b of columns) {
    add('rect', {x: x(b) - 10, y: top - 4, width: 20, height: height(b) + 8, rx: 6, fill: '#f4f4f4', stroke: '#ccc'});
    add('text', {x: x(b), y: top - 10, 'text-anchor': 'start', 'font-size': 11, transform: `rotate(-30 ${x(b)} ${top - 10})`}, b);
  }
  for (const r of shown) {
    const from = senderBlock(r[0]), to = receiverBlock(r[1]), port = (r[1].match(/ ([qkv])$/) || [])[1];
    const x1 = x(from) + 6, y1 = nodeY(from, r[0]), x2 = x(to) - 10, y2 = portY(to, port);
    const bend = Math.max(20, (x2 - x1) / 3), sag = x2 - x1 > colW ? sagPerPixel * (x2 - x1) : 0;
    const share = Number(r[exactCol]);
    const path = add('path', {d: `M${x1} ${y1} C${x1 + bend} ${y1 + sag} ${x2 - bend} ${y2 + sag} ${x2} ${y2}`, fill: 'none',
      stroke: share > 0 ? '#b2182b' : '#2166ac', 'stroke-opacity': 0.75, 'stroke-width': (1 + 7 * Math.abs(share) / widest).toFixed(2),
      class: 'edge'});
    path.dataset.sender = r[0];
    path.dataset.receiver = r[1];
    path.append(Object.assign(document.createElementNS('http://www.w3.org/2000/svg', 'title'),
      {textContent: `${r[0]} \u2192 ${r[1]}: exact ${fmt(share)}` + t.header.slice(exactCol + 1).map((m, k) => `, ${m} ${fmt(Number(r[exactCol + 1 + k]))}`).join('')}));
  }
  for (const b of columns) {
    for (const name of members[b]) add('circle', {cx: x(b), cy: nodeY(b, name), r: 5, fill: '#555'}).append(
      Object.assign(document.createElementNS('http://www.w3.org/2000/svg', 'title'), {textContent: name}));
    if (!members[b].length) add('circle', {cx: x(b), cy: portY(b), r: 6, fill: '#555'});
  }
  box.replaceChildren(el('h3', {}, 'The circuit as a graph: the edges that carry the copy, by exact path patching'), svg,
    el('p', {class: 'note'}, `The ${shown.length} edges (of ${t.rows.length}) whose exact share is largest, at least ${kEdgeShare}: ` +
      'from a head (a dot in its module\'s column), a feed-forward sublayer or an embedding to the q, k or v input of a ' +
      'module (top, middle, bottom of its column) or to the output. Red recovers the clean metric, blue works against it; ' +
      'hover an edge for its exact, EAP and EAP-IG shares (the edges table below).'));
}
// The cell sweep (D.cells): a heatmap per head, query by key, of the share of the gap patching each
// attention cell recovers, exactly or as AtP estimates it (the menu), on one scale for both views;
// grey where the module's mask forbids the cell in every sequence. The readout gives both numbers.
const CELL_VIEWS = {exact: 'exact', AtP: 'atp'};
function drawCellSweep() {
  const s = D.cells, box = document.getElementById('cell-sweep');
  if (!s) return;
  const title = el('h3', {}, `Which attention cells carry the copy: ${s.name}, cell by cell`);
  if (!s.heads) { box.replaceChildren(title, el('p', {class: 'note'}, s.note)); return; }
  const call = D.calls.find(c => c.module === s.module), size = s.seq_q * s.seq_k;
  const maskedEverywhere = (i, j) => {
    for (let b = 0; b < call.batch; ++b) if (call.mask[b * size + i * s.seq_k + j]) return false;
    return true;
  };
  const limit = [...s.exact, ...s.atp].reduce((l, v) => Number.isFinite(v) ? Math.max(l, Math.abs(v)) : l, 1e-30);
  const scale = {lo: -limit, hi: limit, diverging: true, log: false};
  const menu = el('select', {id: 'cells-view'}, ...Object.keys(CELL_VIEWS).map(v => el('option', {value: v}, v)));
  menu.value = state.cellView;
  menu.addEventListener('change', () => { state.cellView = menu.value; clearReadout(); drawCellSweep(); });
  const positions = n => Array.from({length: n}, (_, i) => String(i));
  const figures = [];
  for (let h = 0; h < s.heads; ++h) {
    const share = (view, i, j) => s[CELL_VIEWS[view]][h * size + i * s.seq_k + j];
    const m = {rows: s.seq_q, cols: s.seq_k, value: (i, j) => share(state.cellView, i, j), masked: maskedEverywhere};
    const name = s.name + ' h' + h, canvas = el('canvas', {class: 'cell-sweep', 'data-head': name});
    const g = drawHeatmap(canvas, m, scale, positions(s.seq_q), positions(s.seq_k), SMALL);
    canvas.addEventListener('mousemove', e => {
      const at = cellUnderMouse(canvas, g, e);
      if (!at) return;
      const [i, j] = at;
      showReadout(`${name} cell, query ${i}, key ${j} (${state.cellView} shown) =`,
                  m.masked(i, j) ? 'masked' : `exact ${share('exact', i, j)}, AtP ${share('AtP', i, j)}`);
    });
    figures.push(el('figure', {}, el('figcaption', {}, name), canvas));
  }
  const a = s.agreement, num = v => v === null ? 'undefined' : fmt(v);  // null: NaN in the JSON
  box.replaceChildren(title, el('label', {}, 'Colour by: ', menu), el('div', {class: 'panels'}, ...figures),
    colourBar(scale, 'shared by every head and both views: 0 white, the limit the largest |share|'),
    el('p', {class: 'note'}, `Each cell (rows: query position, columns: key position) patches that one weight of A from ` +
      `the study batch into the corrupted copy, in every sequence at once: the share of the gap of the circuit table ` +
      `it recovers (cells.csv). ${s.name}: the module whose heads' z patches recover the most. AtP against exact over ` +
      `the ${a.compared} cells whose A differs between the runs: Pearson ${num(a.pearson)}, Spearman ${num(a.spearman)}, ` +
      `top-${a.k} recall ${num(a.top_k_recall)}. Hover a cell for both numbers.`));
}
function drawLoss() {
  const box = document.getElementById('loss'), L = D.losses;
  if (!L.length) { box.textContent = D.no_loss_note; return; }
  const W = 720, H = 320, left = 60, right = 12, top = 12, bottom = 40;
  const positive = L.filter(v => v > 0);
  const lo = Math.log10(positive.reduce((a, v) => Math.min(a, v))), hi = Math.log10(positive.reduce((a, v) => Math.max(a, v)));
  const dlo = Math.floor(lo), dhi = Math.max(dlo + 1, Math.ceil(hi));
  const X = s => left + (W - left - right) * s / Math.max(1, L.length - 1);
  const Y = v => top + (H - top - bottom) * (dhi - Math.log10(v)) / (dhi - dlo);
  const {svg, add} = svgOf(W, H);
  for (let d = dlo; d <= dhi; ++d)
    for (const f of [1, 2, 5]) {
      const v = f * 10 ** d;
      if (Math.log10(v) > dhi + 1e-9) continue;
      add('line', {x1: left, x2: W - right, y1: Y(v), y2: Y(v), stroke: f === 1 ? '#bbb' : '#eee'});
      add('text', {x: left - 6, y: Y(v) + 4, 'text-anchor': 'end', 'font-size': 11}, fmt(v));
    }
  const xstep = 10 ** Math.floor(Math.log10(Math.max(1, L.length - 1)));
  for (let s = 0; s < L.length; s += xstep) add('text', {x: X(s), y: H - bottom + 16, 'text-anchor': 'middle', 'font-size': 11}, s + 1);
  add('text', {x: (left + W) / 2, y: H - 6, 'text-anchor': 'middle', 'font-size': 12}, 'step');
  const path = values => values.map((v, s) => (s ? 'L' : 'M') + X(s).toFixed(1) + ' ' + Y(Math.max(v, 10 ** dlo)).toFixed(1)).join('');
  const window = Math.max(1, Math.floor(L.length / 20));
  const mean = L.map((_, s) => { const a = L.slice(Math.max(0, s - window + 1), s + 1); return a.reduce((x, y) => x + y) / a.length; });
  add('path', {d: path(L), fill: 'none', stroke: '#a0bee6', 'stroke-width': 1});
  add('path', {d: path(mean), fill: 'none', stroke: '#2166ac', 'stroke-width': 2});
  box.replaceChildren(svg, el('p', {class: 'note'}, `Loss per training step on a log scale (light), and its mean over the last ${window} steps (dark).`));
}

// ---- controls and start ---------------------------------------------------------------------
function redraw() {
  clearReadout();
  drawOverview();
  drawAttributions();
  if (state.head) openDetail(...state.head);
}
function controls() {
  const box = document.getElementById('controls');
  const seq = el('select', {id: 'sequence'});
  for (let b = 0; b < D.calls[0].batch; ++b) seq.append(el('option', {value: b}, 'sequence ' + b));
  seq.addEventListener('change', () => { state.seq = Number(seq.value); redraw(); });
  const perMap = el('input', {type: 'checkbox', id: 'per-map'});
  perMap.addEventListener('change', () => { state.perMap = perMap.checked; redraw(); });
  const log = el('input', {type: 'checkbox', id: 'log-gradients'});
  log.checked = state.logGradients;
  log.addEventListener('change', () => { state.logGradients = log.checked; redraw(); });
  box.append(el('label', {}, 'Studied batch: ', seq), el('label', {}, perMap, ' per-map colour scaling'),
             el('label', {}, log, ' log colour scale for dL/dA and dL/dS'));
  if (D.snapshots.length >= 2) {
    const n = D.snapshots.length, slider = el('input', {type: 'range', id: 'snapshot-slider', min: 0, max: n, value: n});
    const label = el('span', {id: 'snapshot-label'});
    const show = () => {
      state.snapshot = Number(slider.value);
      const s = D.snapshots[state.snapshot];
      label.textContent = s ? `A and dL/dA at step ${s.step} (L ${fmt(s.loss)})` : 'the study capture (after training)';
    };
    slider.addEventListener('input', () => { show(); redraw(); });
    show();
    box.append(el('label', {}, 'Training snapshot: ', slider, ' ', label));
  }
}
// #selftest=<probe>;<probe>...: each probe <head name>,<query>,<key>[,<quantity>[,<snapshot>]]
// moves the snapshot slider (when given), clicks the head's A thumbnail and moves the mouse over
// cell (query, key) of the quantity's detail map (A, S, dA or dS; "unavailable: <why>" when the
// step has none), all with real DOM events; a
// probe sequence=<b> chooses sequence b in the menu; a probe cell=<table id>,<row name>,<column>
// reads a table's cell and its background colour; scatter=<method> counts the points of that
// method's scatter against exact patching; edges counts the circuit graph's edges and
// edge=<sender>|<receiver> reads one edge's readout; cells=<head name>,<query>,<key>[,<view>]
// colours the cell sweep by the view (exact or AtP), when given, and moves the mouse over that
// head's cell. Each appends the readout then shown as a line
// to #selftest-result (the page's browser test reads it back).
function probe(text) {
  const readout = () => document.getElementById('readout').textContent + ' ' + document.getElementById('readout-value').textContent;
  const scatter = text.match(/^scatter=(.+)$/);
  if (scatter) {
    const svg = [...document.querySelectorAll('svg.scatter')].find(x => x.dataset.method === scatter[1]);
    return svg ? 'points ' + svg.querySelectorAll('circle').length : 'no scatter ' + scatter[1];
  }
  const edge = text.match(/^edge=([^|]+)\|(.+)$/);
  if (edge) {
    const path = [...document.querySelectorAll('svg.edge-graph path.edge')]
      .find(p => p.dataset.sender === edge[1] && p.dataset.receiver === edge[2]);
    return path ? path.querySelector('title').textContent : 'no edge ' + text;
  }
  if (text === 'edges') return 'edges ' + document.querySelectorAll('svg.edge-graph path.edge').length;
  const cell = text.match(/^cells=([^,]+),(\d+),(\d+)(?:,(\w+))?$/);
  if (cell) {
    const menu = document.getElementById('cells-view');
    if (!menu) return 'no cell sweep';
    if (cell[4] !== undefined) {
      menu.value = cell[4];
      menu.dispatchEvent(new Event('change', {bubbles: true}));
    }
    const canvas = document.querySelector(`canvas.cell-sweep[data-head="${cell[1]}"]`);
    if (!canvas) return 'no head ' + cell[1];
    hoverCell(canvas, D.cells.seq_q, D.cells.seq_k, SMALL, Number(cell[2]), Number(cell[3]));
    return readout();
  }
  const cellOf = text.match(/^cell=([^,]+),([^,]+),(.+)$/);
  if (cellOf) {
    const table = document.getElementById('table-' + cellOf[1]);
    if (!table) return 'no table ' + cellOf[1];
    const header = [...table.rows[0].cells].map(c => c.textContent), col = header.indexOf(cellOf[3]);
    const row = [...table.rows].find(r => r.cells[0].textContent === cellOf[2]);
    if (!row || col < 0) return 'no cell ' + text;
    return row.cells[col].textContent + ' ' + row.cells[col].style.background;
  }
  const chosen = text.match(/^sequence=(\d+)$/);
  if (chosen) {
    const menu = document.getElementById('sequence');
    menu.value = chosen[1];
    menu.dispatchEvent(new Event('change', {bubbles: true}));
    return readout();
  }
  const m = text.match(/^([^,]+),(\d+),(\d+)(?:,(\w+))?(?:,(\d+))?$/);
  if (!m) return 'bad probe ' + text;
  const slider = document.getElementById('snapshot-slider');
  if (m[5] !== undefined) {
    if (!slider) return 'no snapshot slider';
    slider.value = m[5];
    slider.dispatchEvent(new Event('input', {bubbles: true}));
  }
  const thumb = document.querySelector(`canvas.thumb[data-head="${m[1]}"]`);
  if (!thumb) return 'no head ' + m[1];
  thumb.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  const canvas = document.querySelector(`canvas.detail[data-quantity="${m[4] || 'A'}"]`);
  if (!canvas) {
    const note = document.querySelector(`#detail .unavailable[data-quantity="${m[4]}"]`);
    return note ? 'unavailable: ' + note.textContent : 'no map ' + m[4];
  }
  const c = D.calls[state.head[0]];
  hoverCell(canvas, c.seq_q, c.seq_k, TARGET, Number(m[2]), Number(m[3]));
  return readout();
}
function selftest() {
  const m = decodeURIComponent(location.hash).match(/^#selftest=(.*)$/);
  if (m) document.getElementById('selftest-result').textContent = m[1].split(';').map(probe).join('\n');
}

document.getElementById('facts').append(...D.facts.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v))));
controls();
drawOverview();
drawAttributions();
document.getElementById('tables').append(...D.tables.map(sortable));
drawCircuitScatters();
drawEdgeGraph();
drawCellSweep();
drawLoss();
selftest();
