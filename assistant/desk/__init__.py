"""The sales desk's store: leads, answer feedback and the question log, in one SQL database.

SQLAlchemy 2 tables (`models.py`) migrated by Alembic (`migrations/`); `DeskStore.open(url)`
upgrades the schema and returns the store. SQLite in the data folder by default, PostgreSQL
through `SIZING_DATABASE_URL`. No IP address or other network identity is ever stored.
"""
