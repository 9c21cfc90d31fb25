"""Launchers for the real servers tests use (one module per server, each a context manager that
starts it on loopback, waits until it answers, and stops it). Fixtures live in each test
package's ``conftest.py`` and call these, so no launcher is written twice."""
