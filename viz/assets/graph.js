(function(){
const D = JSON.parse(document.getElementById('trc-data').textContent);
const byId = new Map(D.nodes.map(n => [n.id, n]));
const inE = new Map(), outE = new Map();
for (const e of D.edges) {
  (inE.get(e.to) || inE.set(e.to, []).get(e.to)).push(e);
  (outE.get(e.from) || outE.set(e.from, []).get(e.from)).push(e);
}
const $ = id => document.getElementById(id);
let step = 0, selected = null;
const picHook = typeof picturesInit === 'function' && document.getElementById('pictures') ? picturesInit(k => { if (k < D.path.length) select(D.path[k]); }) : (() => {});
function flatten(v, pre, out) {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const ks = Object.keys(v);
    if (ks.length === 0) out.push([pre, '{}']);
    for (const k of ks) flatten(v[k], pre ? pre + '.' + k : k, out);
  } else if (Array.isArray(v)) {
    if (v.length === 0) out.push([pre, '[]']);
    else if (v.every(x => x === null || typeof x !== 'object')) out.push([pre, '[' + v.join(', ') + ']']);
    else v.forEach((x, i) => out.push([pre + '[' + i + ']', JSON.stringify(x)]));
  } else out.push([pre, v === null ? 'null' : String(v)]);
  return out;
}
function prevOf(n) {
  if (n.path_index !== null) return n.path_index > 0 ? byId.get(D.path[n.path_index - 1]) : null;
  return n.parent !== null ? byId.get(n.parent) : null;
}
function ssth(v) { return v >= 0x7fffffff ? '∞' : String(v); }
function evList(ul, edges, other) {
  ul.textContent = '';
  for (const e of edges) {
    const li = document.createElement('li');
    const t = byId.get(e[other]);
    li.textContent = (e.path ? '★ ' : '') + e.event + '  → #' + t.id + (t.path_index !== null ? ' (step ' + t.path_index + ')' : '');
    li.onclick = () => select(t.id);
    ul.appendChild(li);
  }
  if (!edges.length) { const li = document.createElement('li'); li.textContent = '(none drawn)'; ul.appendChild(li); }
}
function select(id) {
  const n = byId.get(id);
  if (!n) return;
  selected = id;
  if (n.path_index !== null) step = n.path_index;
  document.querySelectorAll('.node.selected').forEach(e => e.classList.remove('selected'));
  document.querySelectorAll('.node.current').forEach(e => e.classList.remove('current'));
  document.querySelectorAll('.edge.hl').forEach(e => e.classList.remove('hl'));
  const g = $('n' + id);
  g.classList.add(n.path_index !== null ? 'current' : 'selected');
  document.querySelectorAll('.edge[data-from="' + id + '"],.edge[data-to="' + id + '"]').forEach(e => e.classList.add('hl'));
  document.querySelectorAll('.path-edge').forEach(e => e.classList.toggle('done', +e.dataset.step <= step));
  document.querySelectorAll('#steps li').forEach((li, i) => li.classList.toggle('current', i === step && n.path_index !== null));
  picHook(n.path_index !== null ? step : -1);
  $('step-label').textContent = 'step ' + step + ' / ' + (D.path.length - 1);
  const pe = step > 0 ? D.edges.find(e => e.path && e.to === D.path[step]) : null;
  $('step-event').textContent = pe ? pe.event : 'initial state';
  $('prev').disabled = n.path_index !== null && step === 0;
  $('next').disabled = n.path_index !== null && step === D.path.length - 1;
  const s = n.state, x = s.sender;
  $('details-title').textContent = (n.path_index !== null ? 'step ' + n.path_index + ' — ' : 'neighbour (+' + n.dist + ') — ') + 'state #' + n.id;
  $('details-summary').textContent = 'ca_state ' + x.ca_state + '  cwnd ' + x.cwnd + '  ssthresh ' + ssth(x.ssthresh) +
    '\nsnd_una ' + x.snd_una + '  snd_nxt ' + x.snd_nxt + '  high_seq ' + x.high_seq + '  t=' + s.now + 'ms' +
    '\nfingerprint ' + n.fingerprint;
  $('details-viol').textContent = n.violates.length ? '✗ violates ' + n.violates.join('; ') : '';
  evList($('details-in'), inE.get(id) || [], 'from');
  evList($('details-out'), outE.get(id) || [], 'to');
  const p = prevOf(n);
  const before = p ? new Map(flatten(p.state, '', [])) : null;
  const tb = $('fields');
  tb.textContent = '';
  for (const [k, v] of flatten(s, '', [])) {
    const tr = document.createElement('tr');
    tr.dataset.field = k;
    if (before && before.get(k) !== v) tr.className = 'changed';
    const th = document.createElement('th'); th.textContent = k;
    const td = document.createElement('td'); td.textContent = v;
    tr.append(th, td); tb.appendChild(tr);
  }
  $('changed-note').textContent = p ? 'highlighted: changed since #' + p.id : '';
  try { history.replaceState(null, '', '#select=' + id); } catch (e) {}
  try { g.scrollIntoView({block: 'nearest', inline: 'nearest'}); } catch (e) {}
}
function go(d) { const i = Math.max(0, Math.min(D.path.length - 1, step + d)); select(D.path[i]); }
$('prev').onclick = () => go(-1);
$('next').onclick = () => go(1);
document.addEventListener('keydown', e => { if (e.key === 'ArrowLeft') go(-1); else if (e.key === 'ArrowRight') go(1); });
document.querySelectorAll('.node').forEach(g => g.addEventListener('click', () => select(+g.dataset.id)));
const ol = $('steps');
D.path.forEach((id, i) => {
  const li = document.createElement('li');
  const pe = i > 0 ? D.edges.find(e => e.path && e.to === id) : null;
  const n = byId.get(id), x = n.state.sender;
  li.textContent = (pe ? pe.event : 'initial state') + ' ⇒ ' + x.ca_state + ' cwnd ' + x.cwnd + ' ssthresh ' + ssth(x.ssthresh) + (n.violates.length ? '  ✗' : '');
  li.dataset.step = i;
  li.onclick = () => select(id);
  ol.appendChild(li);
});
const m = /^#(select|step)=(\d+)$/.exec(location.hash);
if (m && m[1] === 'select' && byId.has(+m[2])) select(+m[2]);
else if (m && m[1] === 'step' && +m[2] < D.path.length) select(D.path[+m[2]]);
else select(D.path[0]);
document.body.dataset.ready = '1';
})();
