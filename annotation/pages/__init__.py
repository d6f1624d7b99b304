"""The researchers' web pages, one package per domain (see docs/console-and-api.md, "Web
layer: from a URL to its view").

Each `<domain>/urls.py` lists its pages and is included by `config/urls.py`; the view of a
URL sits in that package (`views.py`, or a module named after the URL's last word, e.g.
`runs/texts.py` for `/runs/<id>/texts/`). Worker task pages belong to the crowd providers
(`annotation/crowd/<provider>/views.py`); `work/` holds what they share."""
