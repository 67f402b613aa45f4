"""Every analyst command: the list blackwidow.cli adds to the `blackwidow` group."""

from blackwidow.client.account_commands import credentials, login, logout, nodes, users
from blackwidow.client.crawler_commands import crawlers
from blackwidow.client.export_command import export
from blackwidow.client.item_commands import items
from blackwidow.client.search_command import search

ALL = (login, logout, crawlers, items, search, export, users, credentials, nodes)
