"""The cluster report's load client as a Locust user.

The report ran Locust with python-socketio: each user a socketio.Client over
WebSocket only, emitting one trade_update every 1 to 5 s, users added at
Locust's ramp. This is that user. Each connect and each trade_update is a
Locust request (type socketio), so Locust's own statistics (its CSV files
with --csv) count connects tried and done, and emits sent and acknowledged;
`loadgen watch` sets them beside the target's /stats.

    make locust SIO=http://127.0.0.1:8080 LOCUSTARGS="-u 100 -r 10 -t 60s"

knowngood's Socket.IO targets acknowledge any event with its arguments
(after -ack-delay), so trade_update's ack carries the update back.
Needs Debian's python3-locust and python3-socketio (make deps).
"""

import random
import time

import gevent
import socketio
from locust import User, between, task
from locust.exception import StopUser

# Locust 2.12 times --run-time with gevent.spawn_later, on the event loop's
# clock, which gevent updates only when the loop runs. The hub is made when
# Locust starts, before these imports: on a loaded machine they take
# seconds, the clock stays that far behind, and a short run stopped at once,
# in the middle of its users' connects. Bring the clock up to date here.
gevent.get_hub().loop.update_now()

# Connect and ack timeouts, in seconds: the report's client gave up on a
# connect after its default wait, and an unanswered emit is a failure.
CONNECT_TIMEOUT = 10
ACK_TIMEOUT = 10
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN", "TSLA"]


class TradeUser(User):
    wait_time = between(1, 5)

    def _fire(self, name, started, exc=None, length=0):
        self.environment.events.request.fire(
            request_type="socketio",
            name=name,
            response_time=(time.perf_counter() - started) * 1000,
            response_length=length,
            exception=exc,
            context={},
        )

    def on_start(self):
        self.sio = socketio.Client(reconnection=False)
        started = time.perf_counter()
        try:
            self.sio.connect(self.host, transports=["websocket"], wait_timeout=CONNECT_TIMEOUT)
        except Exception as exc:  # a refused or timed-out connect is the user's end
            self._fire("connect", started, exc)
            raise StopUser() from exc
        except BaseException:
            # The run stopped mid-connect (GreenletExit): close what the
            # client opened, whose background greenlets would keep Locust
            # from exiting.
            self.sio.disconnect()
            raise
        self._fire("connect", started)

    @task
    def trade_update(self):
        update = {"symbol": random.choice(SYMBOLS), "price": round(random.uniform(10, 500), 2), "t": time.time()}
        started = time.perf_counter()
        try:
            ack = self.sio.call("trade_update", update, timeout=ACK_TIMEOUT)
        except Exception as exc:
            self._fire("trade_update", started, exc)
            return
        self._fire("trade_update", started, length=len(str(ack)))

    def on_stop(self):
        if getattr(self, "sio", None) is not None:
            self.sio.disconnect()
