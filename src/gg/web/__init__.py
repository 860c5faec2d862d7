"""``gg serve``: the board and the runs of a workspace as a live, read-only web page (issue 15).

The package owns a small Starlette app (the ``web`` extra: starlette and uvicorn) that
renders gg's state for one workspace as server-side HTML with a little plain JavaScript
(no build step, nothing from a CDN):

- :mod:`gg.web.streams`: the runs of a workspace and bounded reads of their streams (a
  tail that follows a file as it grows, the tamper check's verdict);
- :mod:`gg.web.boardview`: the board's issues read from its store, rendered as columns
  by state;
- :mod:`gg.web.pages`: the HTML pages and fragments (every untrusted text escaped);
- :mod:`gg.web.runpage`: a run's stream rendered as HTML;
- :mod:`gg.web.live`: server-sent events following the streams and the store;
- :mod:`gg.web.app`: the routes; :mod:`gg.web.server`: binding and running it.

Everything shown comes from files an agent may have written (streams, board rows): it
is escaped, read in bounded amounts, and served under a Content-Security-Policy that
runs only gg's own scripts. Nothing here changes any state (GET only).
"""
