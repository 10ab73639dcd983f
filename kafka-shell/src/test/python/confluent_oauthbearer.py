"""confluent-kafka (librdkafka) logging in to kafka-shell with SASL/OAUTHBEARER, its token fetched by librdkafka itself
from an OAuth token endpoint (client credentials, sasl.oauthbearer.method=oidc). Produces 20 records and reads them
back, or reports how authentication failed.

Usage: confluent_oauthbearer.py BOOTSTRAP TOKEN_URL CLIENT_ID TOPIC
Prints "oauthbearer OK 20 records" and exits 0, or prints "oauthbearer AUTH FAILED: <error>" and exits 3."""
import sys
from confluent_kafka import Consumer, KafkaError, Producer

bootstrap, token_url, client_id, topic = sys.argv[1:5]
common = {
    "bootstrap.servers": bootstrap,
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": "OAUTHBEARER",
    "sasl.oauthbearer.method": "oidc",
    "sasl.oauthbearer.token.endpoint.url": token_url,
    "sasl.oauthbearer.client.id": client_id,
    "sasl.oauthbearer.client.secret": client_id + "-secret",
}
auth_errors = []


def on_error(err):
    if err.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
        auth_errors.append(err)


def fail_if_refused():
    if auth_errors:
        print(f"oauthbearer AUTH FAILED: {auth_errors[0]}")
        sys.exit(3)


p = Producer({**common, "acks": "all", "message.timeout.ms": 15000,
              "error_cb": on_error})
errors = []
for i in range(20):
    p.produce(topic, value=f"oauth-{i}", on_delivery=lambda err, msg: errors.append(err) if err else None)
left = p.flush(20)
fail_if_refused()
assert left == 0 and not errors, f"{left} unflushed, errors {errors}"

c = Consumer({**common, "group.id": "oauth-" + topic, "auto.offset.reset": "earliest", "enable.auto.commit": False,
              "error_cb": on_error})
c.subscribe([topic])
got = []
for _ in range(150):
    for m in c.consume(num_messages=100, timeout=0.2):
        if m.error():
            raise SystemExit(f"consume error: {m.error()}")
        got.append(m.value().decode())
    fail_if_refused()
    if len(got) >= 20:
        break
c.close()
assert got == [f"oauth-{i}" for i in range(20)], got
print(f"oauthbearer OK {len(got)} records")
