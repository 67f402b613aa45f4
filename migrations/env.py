"""Alembic environment: migrates the hub's SQL schema (blackwidow.models) online only."""

from alembic import context
from sqlalchemy import engine_from_config, pool

from blackwidow.models import Base

config = context.config

connectable = engine_from_config(
    config.get_section(config.config_ini_section, {}),
    prefix="sqlalchemy.",
    poolclass=pool.NullPool,
)
with connectable.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
