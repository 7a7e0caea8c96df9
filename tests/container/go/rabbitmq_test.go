// Testcontainers for Go's RabbitMQ module (github.com/testcontainers/testcontainers-go/modules/rabbitmq)
// starting the WarrenMQ image, unchanged but for the image name (WARRENMQ_IMAGE). The module writes its own
// rabbitmq.conf (default_user, default_pass), copies it into the container and names it with
// RABBITMQ_CONFIG_FILE, and waits for the log line "Server startup complete". Run by
// tests/container/test_testcontainers.py with DOCKER_HOST on podman's API socket; the part between the
// snippet markers is docs/drop-in.md's Go example, word for word.
package testcontainers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/rabbitmq"
)

func TestRabbitMQModuleStartsTheImage(t *testing.T) {
	image := os.Getenv("WARRENMQ_IMAGE")
	if image == "" {
		image = "warrenmq:test"
	}
	ctx := context.Background()
	// snippet: testcontainers-go
	container, err := rabbitmq.Run(ctx, image,
		rabbitmq.WithAdminUsername("app"),
		rabbitmq.WithAdminPassword("app-secret"),
	)
	defer testcontainers.CleanupContainer(t, container)
	if err != nil {
		t.Fatal(err)
	}

	amqpURL, err := container.AmqpURL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	connection, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer connection.Close()
	channel, err := connection.Channel()
	if err != nil {
		t.Fatal(err)
	}
	queue, err := channel.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := channel.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirmation, err := channel.PublishWithDeferredConfirmWithContext(ctx, "", queue.Name, false, false,
		amqp.Publishing{Body: []byte("from go"), DeliveryMode: amqp.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	if acked, err := confirmation.WaitContext(ctx); err != nil || !acked {
		t.Fatalf("publish not confirmed: %v", err)
	}
	message, ok, err := channel.Get(queue.Name, true)
	if err != nil || !ok || string(message.Body) != "from go" {
		t.Fatalf("basic.get: %v %v %q", err, ok, message.Body)
	}

	httpURL, err := container.HttpURL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	request, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpURL+"/api/whoami", nil)
	request.SetBasicAuth(container.AdminUsername, container.AdminPassword)
	response, err := (&http.Client{Timeout: 10 * time.Second}).Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var whoami struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(response.Body).Decode(&whoami); err != nil || whoami.Name != "app" {
		t.Fatalf("GET /api/whoami: %d %v %q", response.StatusCode, err, whoami.Name)
	}
	// end snippet
}
