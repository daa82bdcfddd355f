(function(){
const rows = Array.from(document.querySelectorAll('#steps tbody tr'));
let hook = () => {};
function select(k) {
  rows.forEach(r => r.classList.toggle('cur', +r.dataset.step === k));
  const r = rows[k];
  if (r && r.scrollIntoView) r.scrollIntoView({block: 'nearest'});
  hook(k);
}
hook = picturesInit(select);
rows.forEach(r => r.addEventListener('click', () => select(+r.dataset.step)));
const m = /step=(\d+)/.exec(location.hash);
select(m ? +m[1] : 0);
document.body.dataset.ready = '1';
})();
