function picturesInit(selectStep) {
  document.querySelectorAll('#pictures [data-pstep]').forEach(el => el.addEventListener('click', ev => { ev.stopPropagation(); selectStep(+el.dataset.pstep); }));
  return function(step) {
    document.querySelectorAll('#pictures .pic-col').forEach(el => el.classList.toggle('cur', +el.dataset.pstep === step));
  };
}
