"""Images: the charts the agent's code displays, kept, described, sent to a model that sees, counted, cleared.

``image.py`` the image as a result carries it; ``figures.py`` what a display becomes (decoded,
bounded, scaled, described from the code); ``vision.py`` which models see images and what one
costs them. The stages handle images as a category of their own: the prompt sends them after the
round's results (``context/prompt.py``), eviction clears them first (``context/lossless/eviction.py``),
the store keeps their bytes by result (``store`` ``Images``), ``view_image`` shows one again.
"""
