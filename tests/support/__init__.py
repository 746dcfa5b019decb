"""The shared fakes of the tests: real parts, no network, no downloads.

- :mod:`.openai_server` / :mod:`.gemini_server`: HTTP servers on 127.0.0.1 speaking the
  OpenAI chat-completions and Gemini REST protocols, with every fault of the Guarantees on demand.
- :mod:`.datasets` (tiny released-layout datasets), :mod:`.videogen` (awkward H.264 files),
  :mod:`.scene_videos` (videos with known scenes and objects for the construction tests): videos
  written with PyAV.
- the tiny transformers models the tests run are :mod:`mtvbench.models.tiny` (a smoke test for users too).
- :mod:`.build_replies` (the scripted build model), :mod:`.detector` (a colour-blob detector),
  :mod:`.builds` (a workspace made by ``build all``).
- :mod:`.runs` (run directories with scripted answers), :mod:`.run_helpers` (run settings for the
  loopback server, readers of a run directory), :mod:`.hubfake` (a Hugging Face Hub cache on disk),
  :mod:`.hostile` (hostile text for every output sink), :mod:`.browser` (the system Chromium).
"""
