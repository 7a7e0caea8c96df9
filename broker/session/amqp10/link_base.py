"""What a link without deliveries to push does at the session's turns, and how it detaches with an error: the
base of the incoming (publishing) links and of the /management node's pair."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.amqp10.performatives import Detach
from protocol.amqp10.types import UInt

if TYPE_CHECKING:
    from broker.session.amqp10.ports import SessionPort
    from protocol.amqp10.condition import Error


class QuietLink:
    """Nothing to do after a read, on a wake-up or once detached; ``detach_with`` ends the link with an
    error (a closing detach), as rabbit_amqp_session does."""

    session: SessionPort
    handle: int

    def after_read(self) -> None:
        pass

    def wake(self) -> None:
        pass

    def detached(self) -> None:
        pass

    def detach_with(self, error: Error) -> None:
        self.session.send(Detach(handle=UInt(self.handle), closed=True, error=error))
