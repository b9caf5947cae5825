"""An HTML view that appends what a streamed value adds instead of redrawing all of it.

Gradio's HTML component redraws on every change: it evaluates its template over the whole value,
parses the result and walks every node to patch the page. A run's token spans only grow while it
streams, so at several updates a second that work grows with the text and competes with the model
for the same cores. This view's template never changes (so Gradio's redraw is a no-op) and a
small script adds only the new tail; any other change (a new run, the "show rejected" toggle)
replaces the content. The value, and so every API caller's output, stays the full HTML.

The view is a box of fixed height that scrolls (assets/ui.css) and follows the newest text unless
its reader has scrolled up: a view that grew would move everything below it (the stats and seven
charts) at each new line, and the page would repaint all of it while the model runs.
"""

import gradio as gr

CONTAINER = "appending-view"

FOLLOW_SLACK = 24  # pixels from the bottom within which the reader counts as following the end
APPEND_THE_NEW_TAIL = f"""
const view = element.querySelector('.{CONTAINER}');
let shown = '';
const show = () => {{
  const html = props.value || '';
  const following = view.scrollHeight - view.scrollTop - view.clientHeight < {FOLLOW_SLACK};
  if (shown && html.startsWith(shown)) view.insertAdjacentHTML('beforeend', html.slice(shown.length));
  else view.innerHTML = html;
  shown = html;
  if (following) view.scrollTop = view.scrollHeight;
}};
show();
watch('value', show);
"""


def appending_html(**options) -> gr.HTML:
    return gr.HTML(html_template=f'<div class="{CONTAINER}"></div>', js_on_load=APPEND_THE_NEW_TAIL, **options)
