"""The built-in memory systems and readers, one explicit list each (memory.py, readers.py).

Why a package above memory/ and readers/: these lists name kinds that live in other packages too
(products, agentic modes, which themselves build on memory/ and readers/), so they sit above every
package they list and nothing below imports them back (only the resolver, pipeline/kinds/resolve.py,
looks kinds up). Judges all live in judges/, so their list stays there (pipeline/kinds/judges.py).
"""
