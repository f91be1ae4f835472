"""Neo4j Browser support for the managed server: kbgraph's stylesheet (``kbgraph.grass``: colour,
size and caption per label, captions on relationships), a guide (``guide.html``, Browser guide
slides), and the small HTTP server that hands both to the Browser.

:mod:`kbgraph.store.managed.browser.assets` says what is served and which neo4j.conf settings make the Browser
load it on connect; :mod:`kbgraph.store.managed.browser.asset_server` serves it; :mod:`kbgraph.store.managed.browser.asset_process`
runs that server next to the managed Neo4j.
"""
