"""Publishing an export version to a public archive: one module per destination
(`huggingface.py`: the Hugging Face Hub through `huggingface_hub`; `zenodo.py`: Zenodo's REST
deposit API through `requests`) behind `base.Destination`; `publications.py` is the service
(intent recorded first as a `Publication` row, resumed on the next attempt); the command is
`manage.py export_release <run> --to huggingface <repo> | --to zenodo [--dry-run]`."""
