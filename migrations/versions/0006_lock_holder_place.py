"""Where a lock's holder runs (machine boot and pid namespace), so a hub restarted on the
same machine takes the lock of a holder that died at once rather than waiting it out.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("monitor_lock") as batch:
        batch.add_column(sa.Column("holder_place", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("monitor_lock") as batch:
        batch.drop_column("holder_place")
