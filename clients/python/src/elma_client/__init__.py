"""Python client for ELMA, governed long-term memory for AI agents.

    from elma_client import Elma

    elma = Elma("http://127.0.0.1:8080", token, purpose="support")
    elma.remember("The customer prefers email.", subject="cust-42")
    pack = elma.recall("how to contact the customer?", consistency="strong")
"""

from ._http import __version__
from .client import Elma
from .errors import ElmaConnectionError, ElmaError

__all__ = ["Elma", "ElmaError", "ElmaConnectionError", "__version__"]
