"""Image-text encoders (CLIP, SigLIP) from local folders through Hugging Face transformers.

`loading` opens a model folder offline, `openai_clip` converts OpenAI-CLIP / open_clip
checkpoints to transformers' layout, `encode` turns images and captions into unit rows,
`scores` holds which caption scores apply to which model family, `estimate` the time a job
will take. torch and transformers are imported only when a model is loaded (the optional
`encoders` extra), so importing this package costs nothing.
"""
