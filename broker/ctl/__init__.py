"""RabbitMQ's command-line tools by their names (rabbitmq-diagnostics, rabbitmqctl, rabbitmq-server) for the
commands that healthchecks and start-up scripts use. They find the broker as RabbitMQ's CLIs do inside a
container: from the environment and configuration files the server reads, with ``-n`` as an override."""
