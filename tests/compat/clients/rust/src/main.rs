// The client matrix's Rust program: lapin from crates.io (Cargo.lock), on tokio.
// Usage: clientmatrix-scenario AMQP_URL NAME_PREFIX [MANAGEMENT_URL]; prints one JSON observation (see
// tests/compat/clients/README.md).

mod json;

use json::Json;
use lapin::message::{Delivery, DeliveryResult};
use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Consumer};
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

type Outcome = Result<Json, String>;

async fn connect(url: &str) -> Result<Connection, String> {
    let connecting = Connection::connect(url, ConnectionProperties::default());
    match timeout(WAIT, connecting).await {
        Ok(conn) => conn.map_err(|err| err.to_string()),
        Err(_) => Err("timeout: connect".into()),
    }
}

async fn bounded<T>(what: &str, fut: impl Future<Output = lapin::Result<T>>) -> Result<T, String> {
    match timeout(WAIT, fut).await {
        Ok(result) => result.map_err(|err| err.to_string()),
        Err(_) => Err(format!("timeout: {what}")),
    }
}

/// Each step has its own connection, so that a failure in one cannot hide the others.
async fn step<F, Fut>(url: &str, body: F) -> Json
where
    F: FnOnce(Connection) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let outcome = match connect(url).await {
        Ok(conn) => body(conn).await,
        Err(err) => Err(err),
    };
    outcome.unwrap_or_else(|err| Json::object([("error", Json::from(err))]))
}

/// The consumer's deliveries, forwarded to a channel that the scenario reads with a deadline. Sent when
/// the delegate is called, in delivery order: lapin may run the futures that delegates return concurrently.
fn forwarded(consumer: &Consumer) -> mpsc::UnboundedReceiver<Delivery> {
    let (sender, receiver) = mpsc::unbounded_channel();
    consumer.set_delegate(move |delivery: DeliveryResult| {
        if let Ok(Some(delivery)) = delivery {
            let _ = sender.send(delivery);
        }
        async {}
    });
    receiver
}

async fn declare(ch: &Channel, name: &str) -> Result<u32, String> {
    let options = QueueDeclareOptions {
        exclusive: true,
        ..Default::default()
    };
    let queue = bounded(
        "queue.declare",
        ch.queue_declare(name.into(), options, FieldTable::default()),
    )
    .await?;
    Ok(queue.message_count())
}

async fn channel_open_close(conn: Connection) -> Outcome {
    let first = bounded("channel.open", conn.create_channel()).await?;
    bounded("channel.close", first.close(200, "bye".into())).await?;
    let second = bounded("channel.open", conn.create_channel()).await?;
    let count = declare(&second, "").await?;
    let result = Json::object([
        ("first_closed", Json::Bool(!first.status().connected())),
        (
            "second_open",
            Json::Bool(second.status().connected() && count == 0),
        ),
    ]);
    let _ = conn.close(200, "bye".into()).await;
    Ok(result)
}

/// lapin hands each basic.return to the publisher confirm of its message: a confirm that carries a
/// returned message is reported as the return followed by its ack.
async fn confirms(conn: Connection, prefix: &str) -> Outcome {
    let queue = format!("{prefix}-confirms");
    let nowhere = format!("{prefix}-nowhere");
    let ch = bounded("channel.open", conn.create_channel()).await?;
    declare(&ch, &queue).await?;
    bounded(
        "confirm.select",
        ch.confirm_select(ConfirmSelectOptions::default()),
    )
    .await?;
    let mandatory = BasicPublishOptions {
        mandatory: true,
        ..Default::default()
    };
    let mut pending = Vec::new();
    for (key, body) in [(&nowhere, "r1"), (&nowhere, "r2"), (&queue, "m1")] {
        let publish = ch.basic_publish(
            "".into(),
            key.as_str().into(),
            mandatory,
            body.as_bytes(),
            BasicProperties::default(),
        );
        pending.push(bounded("basic.publish", publish).await?);
    }
    let mut events = Vec::new();
    for (tag, confirm) in pending.into_iter().enumerate() {
        let confirmation = bounded("confirm", confirm).await?;
        let acked = confirmation.is_ack();
        if let Some(returned) = confirmation.take_message() {
            events.push(Json::Array(vec![
                Json::from("return"),
                Json::Int(i64::from(returned.reply_code)),
                Json::from(returned.reply_text.as_str()),
                Json::from(returned.delivery.exchange.as_str()),
                Json::from(returned.delivery.routing_key.as_str()),
                Json::from(String::from_utf8_lossy(&returned.delivery.data).into_owned()),
            ]));
        }
        events.push(Json::Array(vec![
            Json::from(if acked { "ack" } else { "nack" }),
            Json::Int(tag as i64 + 1),
        ]));
    }
    let _ = conn.close(200, "bye".into()).await;
    Ok(Json::object([("events", Json::Array(events))]))
}

async fn consume(conn: Connection, prefix: &str) -> Outcome {
    let queue = format!("{prefix}-consume");
    let ch = bounded("channel.open", conn.create_channel()).await?;
    declare(&ch, &queue).await?;
    bounded(
        "confirm.select",
        ch.confirm_select(ConfirmSelectOptions::default()),
    )
    .await?;
    for body in ["a", "b", "c"] {
        let publish = ch.basic_publish(
            "".into(),
            queue.as_str().into(),
            BasicPublishOptions::default(),
            body.as_bytes(),
            BasicProperties::default(),
        );
        bounded("basic.publish", publish).await?;
    }
    bounded("confirms", ch.wait_for_confirms()).await?;
    bounded("basic.qos", ch.basic_qos(10, BasicQosOptions::default())).await?;
    let consumer = bounded(
        "basic.consume",
        ch.basic_consume(
            queue.as_str().into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        ),
    )
    .await?;
    let mut deliveries = forwarded(&consumer);
    let mut seen = Vec::new();
    loop {
        let delivery = match timeout(WAIT, deliveries.recv()).await {
            Ok(Some(delivery)) => delivery,
            _ => return Err("timeout: deliveries".into()),
        };
        let body = String::from_utf8_lossy(&delivery.data).into_owned();
        seen.push(Json::Array(vec![
            Json::from(body.as_str()),
            Json::Bool(delivery.redelivered),
        ]));
        let acker = &delivery.acker;
        match (body.as_str(), delivery.redelivered) {
            ("a", _) => bounded("basic.ack", acker.ack(BasicAckOptions::default()))
                .await
                .map(|_| ())?,
            ("b", _) => bounded(
                "basic.nack",
                acker.nack(BasicNackOptions {
                    requeue: false,
                    ..Default::default()
                }),
            )
            .await
            .map(|_| ())?,
            (_, false) => bounded(
                "basic.reject",
                acker.reject(BasicRejectOptions { requeue: true }),
            )
            .await
            .map(|_| ())?,
            (_, true) => {
                bounded("basic.ack", acker.ack(BasicAckOptions::default())).await?;
                break;
            }
        }
    }
    let passive = QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    let left = bounded(
        "queue.declare",
        ch.queue_declare(queue.as_str().into(), passive, FieldTable::default()),
    )
    .await?;
    let _ = conn.close(200, "bye".into()).await;
    Ok(Json::object([
        ("deliveries", Json::Array(seen)),
        ("message_count", Json::Int(i64::from(left.message_count()))),
    ]))
}

async fn direct_reply_to(conn: Connection, prefix: &str) -> Outcome {
    let queue = format!("{prefix}-rpc");
    let server = bounded("channel.open", conn.create_channel()).await?;
    declare(&server, &queue).await?;
    let no_ack = BasicConsumeOptions {
        no_ack: true,
        ..Default::default()
    };
    let requests = bounded(
        "basic.consume",
        server.basic_consume(
            queue.as_str().into(),
            "".into(),
            no_ack,
            FieldTable::default(),
        ),
    )
    .await?;
    let mut incoming = forwarded(&requests);
    let client = bounded("channel.open", conn.create_channel()).await?;
    let replies = bounded(
        "basic.consume",
        client.basic_consume(
            "amq.rabbitmq.reply-to".into(),
            "".into(),
            no_ack,
            FieldTable::default(),
        ),
    )
    .await?;
    let mut answers = forwarded(&replies);
    let request = BasicProperties::default()
        .with_reply_to("amq.rabbitmq.reply-to".into())
        .with_correlation_id("c1".into());
    bounded(
        "basic.publish",
        client.basic_publish(
            "".into(),
            queue.as_str().into(),
            BasicPublishOptions::default(),
            b"ping",
            request,
        ),
    )
    .await?;
    let Ok(Some(asked)) = timeout(WAIT, incoming.recv()).await else {
        return Err("timeout: request".into());
    };
    let reply_to = asked
        .properties
        .reply_to()
        .clone()
        .map(|name| name.as_str().to_owned())
        .unwrap_or_default();
    let shown_prefix = if reply_to.starts_with("amq.rabbitmq.reply-to.") {
        "amq.rabbitmq.reply-to."
    } else {
        reply_to.as_str()
    };
    // RabbitMQ answers a passive declare of the pseudo-queue's name with declare-ok.
    let probe = bounded("channel.open", conn.create_channel()).await?;
    let passive = QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    let declared = match bounded(
        "queue.declare",
        probe.queue_declare(reply_to.as_str().into(), passive, FieldTable::default()),
    )
    .await
    {
        Ok(_) => "declare-ok".to_owned(),
        Err(err) => err,
    };
    let correlation = asked
        .properties
        .correlation_id()
        .clone()
        .unwrap_or_default();
    let reply = BasicProperties::default().with_correlation_id(correlation);
    bounded(
        "basic.publish",
        server.basic_publish(
            "".into(),
            reply_to.as_str().into(),
            BasicPublishOptions::default(),
            b"pong",
            reply,
        ),
    )
    .await?;
    let Ok(Some(answer)) = timeout(WAIT, answers.recv()).await else {
        return Err("timeout: reply".into());
    };
    let correlation_id = answer
        .properties
        .correlation_id()
        .clone()
        .map(|id| id.as_str().to_owned())
        .unwrap_or_default();
    let _ = conn.close(200, "bye".into()).await;
    Ok(Json::object([
        ("prefix", Json::from(shown_prefix)),
        ("passive_declare", Json::from(declared)),
        (
            "reply",
            Json::from(String::from_utf8_lossy(&answer.data).into_owned()),
        ),
        ("correlation_id", Json::from(correlation_id)),
    ]))
}

async fn heartbeats(url: &str) -> Json {
    let asked = format!("{url}?heartbeat=1");
    step(&asked, |conn| async move {
        let negotiated = conn.configuration().heartbeat();
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let ch = bounded("channel.open", conn.create_channel()).await?;
        let count = declare(&ch, "").await?;
        let alive = conn.status().connected() && count == 0;
        let _ = conn.close(200, "bye".into()).await;
        Ok(Json::object([
            ("negotiated", Json::Int(i64::from(negotiated))),
            ("alive", Json::Bool(alive)),
        ]))
    })
    .await
}

/// basic.publish has no reply, so the channel is put in confirm mode: lapin fails the pending publisher
/// confirm with the broker's channel.close. (Asking with a later basic.qos instead races the close: if it
/// has arrived first, lapin refuses the qos itself as "invalid channel state: Closing".)
async fn refused(conn: Connection, prefix: &str) -> Outcome {
    let ch = bounded("channel.open", conn.create_channel()).await?;
    bounded(
        "confirm.select",
        ch.confirm_select(ConfirmSelectOptions::default()),
    )
    .await?;
    let exchange = format!("{prefix}-missing");
    let confirm = bounded(
        "basic.publish",
        ch.basic_publish(
            exchange.as_str().into(),
            "k".into(),
            BasicPublishOptions::default(),
            b"x",
            BasicProperties::default(),
        ),
    )
    .await?;
    let error = match bounded("publisher confirm", confirm).await {
        Ok(confirmation) => format!("no error: {confirmation:?}"),
        Err(err) => err,
    };
    let other = bounded("channel.open", conn.create_channel()).await?;
    declare(&other, "").await?;
    let result = Json::object([
        ("error", Json::from(error)),
        ("channel_closed", Json::Bool(!ch.status().connected())),
        ("connection_open", Json::Bool(conn.status().connected())),
    ]);
    let _ = conn.close(200, "bye".into()).await;
    Ok(result)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (url, prefix) = (args[1].as_str(), args[2].as_str());
    let observation = Json::object([
        ("channel", step(url, channel_open_close).await),
        ("confirms", step(url, |conn| confirms(conn, prefix)).await),
        ("consume", step(url, |conn| consume(conn, prefix)).await),
        (
            "direct_reply_to",
            step(url, |conn| direct_reply_to(conn, prefix)).await,
        ),
        ("heartbeats", heartbeats(url).await),
        ("refused", step(url, |conn| refused(conn, prefix)).await),
    ]);
    println!("{observation}");
    std::process::exit(0);
}
