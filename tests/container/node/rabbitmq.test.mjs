// Testcontainers for Node's RabbitMQ module starting the WarrenMQ image, unchanged but for the image name
// (WARRENMQ_IMAGE). Its wait strategy is the log line "Server startup complete", which WarrenMQ prints as
// RabbitMQ does. Run by tests/container/test_testcontainers.py with DOCKER_HOST on podman's API socket; the
// part between the snippet markers is docs/drop-in.md's Node example, word for word.
import assert from "node:assert/strict";
import { test } from "node:test";

import { RabbitMQContainer } from "@testcontainers/rabbitmq";
import amqp from "amqplib";

const image = process.env.WARRENMQ_IMAGE ?? "warrenmq:test";
// Podman 4's Docker API lists every port the image EXPOSEs in HostConfig.PortBindings, unpublished ones as
// null, and Testcontainers waits until each is bound (testcontainers-node#1108), so with podman 4 any image that
// EXPOSEs a port the module does not map never starts: rabbitmq's own too (it EXPOSEs 15691, 15692, 25672,
// 4369); the maintainers found podman 5 unaffected. The pytest side names those ports (PODMAN4_UNMAPPED_PORTS)
// only when the runtime is podman 4; otherwise the module runs exactly as published.
const podman4Unmapped = (process.env.PODMAN4_UNMAPPED_PORTS ?? "").split(",").filter(Boolean).map(Number);

test("the RabbitMQ module starts the image, amqplib publishes and consumes, the management API answers", async () => {
  // snippet: testcontainers-node
  const container = await new RabbitMQContainer(image).withExposedPorts(...podman4Unmapped).start();
  try {
    const connection = await amqp.connect(container.getAmqpUrl());
    const channel = await connection.createConfirmChannel();
    const { queue } = await channel.assertQueue("", { exclusive: true });
    channel.sendToQueue(queue, Buffer.from("from node"), { persistent: true });
    await channel.waitForConfirms();
    const message = await channel.get(queue, { noAck: true });
    assert.equal(message.content.toString(), "from node");
    await connection.close();

    const api = `http://${container.getHost()}:${container.getMappedPort(15672)}/api`;
    const response = await fetch(`${api}/whoami`, {
      headers: { authorization: `Basic ${Buffer.from("guest:guest").toString("base64")}` },
    });
    assert.equal((await response.json()).name, "guest");
  } finally {
    await container.stop();
  }
  // end snippet
});
