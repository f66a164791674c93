"""compactctl: compact LLM-agent transcripts to a token budget.

    import compactctl
    [t] = compactctl.read(["session.jsonl"])
    counter = compactctl.make_counter("gpt-4o")
    out, report = compactctl.compact(t, counter, compactctl.OfflineSummarizer())
    print(compactctl.write(out).decode())
"""

from .api import *  # noqa: F403
from .api import __all__ as _api_all
from .summarizers.base import OfflineSummarizer

__version__ = "0.1.0"
__all__ = [*_api_all, "OfflineSummarizer", "__version__"]
