"""High availability on a shared PostgreSQL store: nodes elect one active node through a lease row carrying
an epoch (``leadership``); the store fences every commit with that epoch, so a deposed node can never commit
or confirm after a successor took over. An outer ring beside ``broker.storage``: core and session never
import it; the composition root (``broker.node``) wires it in."""
