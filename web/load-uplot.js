// uPlot (the Train and Sentiment tabs' charts), loaded the first time a chart is shown so the page
// stays light until then: its stylesheet once, and the module through the page's import map.
let loading = null;

/** The uPlot constructor. */
export function loadUPlot() {
  loading ??= (async () => {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = '/node_modules/uplot/dist/uPlot.min.css';
    document.head.append(link);
    return (await import('uplot')).default;
  })();
  return loading;
}
