"""The ``x-random`` exchange type (rabbitmq_random_exchange): one binding, picked at random, per message.

As the plugin's README says of modern releases, routing keys are ignored and the binding, and with it its
destination, is picked uniformly at random, so a queue bound twice is twice as likely to be picked.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, ClassVar

from broker.core.model.message import Message


class RandomExchangeType:
    type_name: ClassVar[str] = "x-random"
    unique_destinations: ClassVar[bool] = True  # one destination per route

    __slots__ = ("_bindings", "rng")

    def __init__(self) -> None:
        self._bindings: list[object] = []
        self.rng = random.Random()  # tests may seed it for a reproducible pick

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        """The plugin accepts any declare arguments."""

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        self._bindings.append(destination)

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        try:
            self._bindings.remove(destination)
        except ValueError:
            return

    def route(self, message: Message) -> tuple[object, ...]:
        bindings = self._bindings
        if not bindings:
            return ()
        return (bindings[0],) if len(bindings) == 1 else (self.rng.choice(bindings),)
