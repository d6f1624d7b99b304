"""What every crowd provider's worker task page shares: rendering a HIT's page with its
image URLs (`render.py`), reading a posted task form (`forms.py`) and saving its answers in
progress (`drafts.py`). The pages themselves live in `annotation/crowd/<provider>/views.py`."""
