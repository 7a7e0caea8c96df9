"""One module per resource of RabbitMQ's HTTP API; each exposes ROUTES for the app's single route table."""
