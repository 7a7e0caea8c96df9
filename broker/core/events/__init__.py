"""The event bus and what it carries: topology events, lifecycle notices (users, vhosts, policies);
imports `policies` and the layers below it."""
