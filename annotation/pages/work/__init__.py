"""What every crowd provider's worker task page shares: rendering a HIT's page with its
image URLs (`render.py`) and reading a posted task form (`forms.py`). The pages themselves
live in `annotation/crowd/<provider>/views.py`."""
