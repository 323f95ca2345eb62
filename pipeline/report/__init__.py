"""The aggregate report: results.json and the static HTML pages, rendered from the catalog's views.

The views themselves (pipeline/catalog/report.py) are listed in pipeline.catalog.views.CATALOG_VIEWS,
which every ResultStore connection runs: importing this package registers nothing.
"""
