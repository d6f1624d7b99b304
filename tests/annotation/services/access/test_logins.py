"""Sign-in throttle (issue 25, issue 47): failures counted per username from one address, per
address and per username in the database; a cool-off lock of the pair or the address, a
username slowed (never locked) past its limit, successes clear the counts, `login_unlock` and
the admin's page clear a lock."""

import base64
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from annotation.models import Event

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"


@pytest.fixture
def users(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast
    settings.CROWDVL_LOGIN_ACCOUNT_FAILURES = 5
    settings.CROWDVL_LOGIN_ADDRESS_FAILURES = 20
    settings.CROWDVL_LOGIN_WINDOW_SECONDS = 900
    settings.CROWDVL_LOGIN_LOCK_SECONDS = 900
    make = get_user_model().objects.create_user
    return {name: make(name, password=PASSWORD) for name in ("alice", "bob", "carol")}


def sign_in(username, password, address="10.0.0.1"):
    client = Client(REMOTE_ADDR=address)
    response = client.post("/accounts/login/", {"username": username, "password": password})
    return response, client


def signed_in(response):
    return response.status_code == 302


def test_five_wrong_passwords_lock_the_account_even_for_the_right_one(users):
    assert signed_in(sign_in("alice", PASSWORD)[0])
    for _ in range(5):
        response, _ = sign_in("alice", "wrong")
        assert response.status_code == 200 and b"correct username and password" in response.content
    response, client = sign_in("alice", PASSWORD)
    assert response.status_code == 429 and b"Too many failed sign-ins" in response.content
    assert b"for this account from this address" in response.content
    assert "_auth_user_id" not in client.session
    assert sign_in("Alice", PASSWORD)[0].status_code == 429  # however the name is spelt
    assert Event.objects.filter(action="login.locked").count() == 1


def test_wrong_passwords_from_elsewhere_never_lock_the_owner_out(users):
    """Audit issue 47: anyone who knew a username locked its owner out for 15 minutes, again
    and again. Now the guesser's address is locked, the owner's is not."""
    attacker, others, owner = "10.6.6.6", [f"10.7.7.{n}" for n in range(1, 4)], "10.0.0.50"
    for _ in range(100):
        sign_in("alice", "wrong", address=attacker)
    for address in others:
        for _ in range(5):
            sign_in("alice", "wrong", address=address)
    # The owner, from an address that never failed, signs in with the right password.
    response, client = sign_in("alice", PASSWORD, address=owner)
    assert signed_in(response) and "_auth_user_id" in client.session
    # The guesser's address is locked: for alice, and (it kept trying) for everyone else.
    assert sign_in("alice", PASSWORD, address=attacker)[0].status_code == 429
    assert sign_in("bob", PASSWORD, address=attacker)[0].status_code == 429
    # The other guessers were slowed after their first failure (not counted further): their
    # addresses are not locked for anyone else.
    assert signed_in(sign_in("bob", PASSWORD, address=others[0])[0])


def test_guessing_a_username_from_many_addresses_is_slowed(users):
    from annotation.models import LoginThrottle

    for n in range(5):  # the username's limit, one failure from each of five addresses
        sign_in("alice", "wrong", address=f"10.7.7.{n}")
    # Guessing from another address: one try is checked, the next must wait.
    guesser = "10.8.8.8"
    first, _ = sign_in("alice", "wrong", address=guesser)
    assert first.status_code == 200 and b"correct username and password" in first.content
    counted = LoginThrottle.objects.get(scope="account", key="alice").failures
    again, _ = sign_in("alice", "wrong-again", address=guesser)
    assert again.status_code == 429 and b"wait" in again.content
    assert 1 <= int(again["Retry-After"]) <= 61
    # Refused before the password is tried: not even counted as the username's failure.
    assert LoginThrottle.objects.get(scope="account", key="alice").failures == counted
    assert sign_in("alice", PASSWORD, address=guesser)[0].status_code == 429
    assert Event.objects.filter(action="login.slowed").count() == 1
    # An address that has not failed on alice is not slowed: the owner signs in.
    assert signed_in(sign_in("alice", PASSWORD, address="10.0.0.50")[0])


def test_a_success_clears_the_accounts_count(users):
    for _ in range(4):
        sign_in("alice", "wrong")
    assert signed_in(sign_in("alice", PASSWORD)[0])
    for _ in range(4):
        sign_in("alice", "wrong")
    assert signed_in(sign_in("alice", PASSWORD)[0])


def test_other_accounts_from_the_address_work_until_the_address_limit(users):
    for _ in range(4):  # bob locked, 5 address failures so far
        sign_in("bob", "wrong")
    sign_in("bob", "wrong")
    assert sign_in("bob", PASSWORD)[0].status_code == 429
    assert signed_in(sign_in("carol", PASSWORD)[0])
    for n in range(15):  # made-up names, each under its own limit: 20 from the address
        sign_in(f"nobody{n}", "wrong")
    response, _ = sign_in("carol", PASSWORD)
    assert response.status_code == 429
    # Another address is not affected.
    assert signed_in(sign_in("carol", PASSWORD, address="10.0.0.2")[0])


def test_the_lock_ends_after_the_cool_off(users):
    for _ in range(5):
        sign_in("alice", "wrong")
    assert sign_in("alice", PASSWORD)[0].status_code == 429
    # 15 minutes later (the rows moved back in time instead of the clock forward).
    from annotation.models import LoginThrottle  # issue 25's table

    past = timedelta(seconds=901)
    for row in LoginThrottle.objects.all():
        LoginThrottle.objects.filter(pk=row.pk).update(
            window_start=row.window_start - past,
            locked_until=row.locked_until and row.locked_until - past,
        )
    assert signed_in(sign_in("alice", PASSWORD)[0])
    # Counting starts again from zero.
    for _ in range(4):
        sign_in("alice", "wrong")
    assert signed_in(sign_in("alice", PASSWORD)[0])


def test_login_unlock_clears_an_account_or_an_address(users):
    for _ in range(5):
        sign_in("alice", "wrong")
    assert sign_in("alice", PASSWORD)[0].status_code == 429
    call_command("login_unlock", "alice")
    assert signed_in(sign_in("alice", PASSWORD)[0])
    for n in range(20):
        sign_in(f"nobody{n}", "wrong", address="10.0.0.7")
    assert sign_in("bob", PASSWORD, address="10.0.0.7")[0].status_code == 429
    call_command("login_unlock", "--address", "10.0.0.7")
    assert signed_in(sign_in("bob", PASSWORD, address="10.0.0.7")[0])
    assert Event.objects.filter(action="login.unlocked").count() == 2


def test_the_proxy_header_names_the_address(users, settings):
    settings.CROWDVL_CLIENT_IP_HEADER = "HTTP_X_REAL_IP"
    client = Client(REMOTE_ADDR="127.0.0.1")
    for n in range(20):
        client.post(
            "/accounts/login/",
            {"username": f"nobody{n}", "password": "x"},
            HTTP_X_REAL_IP="192.0.2.5",
        )
    response = client.post(
        "/accounts/login/", {"username": "bob", "password": PASSWORD}, HTTP_X_REAL_IP="192.0.2.6"
    )
    assert signed_in(response)
    response = client.post(
        "/accounts/login/", {"username": "bob", "password": PASSWORD}, HTTP_X_REAL_IP="192.0.2.5"
    )
    assert response.status_code == 429


def test_the_apis_basic_auth_is_throttled_too(users):
    def basic(password):
        key = base64.b64encode(f"alice:{password}".encode()).decode()
        return Client(REMOTE_ADDR="10.0.0.3").get("/api/runs/", HTTP_AUTHORIZATION=f"Basic {key}")

    assert basic(PASSWORD).status_code != 401
    for _ in range(5):
        assert basic("wrong").status_code == 401
    assert basic(PASSWORD).status_code == 401
    # The sign-in page says the same, from that address; another is not locked.
    assert sign_in("alice", PASSWORD, address="10.0.0.3")[0].status_code == 429
    assert signed_in(sign_in("alice", PASSWORD, address="10.0.0.4")[0])


def test_the_test_clients_login_and_a_shell_are_not_counted(users):
    client = Client()
    for _ in range(10):
        assert not client.login(username="alice", password="wrong")
    assert client.login(username="alice", password=PASSWORD)
    assert not Event.objects.filter(action="login.locked").exists()


def test_staff_see_and_clear_locks_in_the_admin(users, admin_client, client):
    from annotation.models import LoginThrottle

    for _ in range(5):
        sign_in("alice", "wrong", address="10.0.0.9")
    assert sign_in("alice", PASSWORD, address="10.0.0.9")[0].status_code == 429
    url = "/admin/annotation/loginthrottle/"
    listing = admin_client.get(url)
    assert listing.status_code == 200 and "alice|10.0.0.9" in listing.content.decode()
    client.force_login(users["bob"])  # not staff: the admin's sign-in page
    assert client.get(url).status_code == 302
    pair = LoginThrottle.objects.get(scope="pair")
    cleared = admin_client.post(
        url, {"action": "clear", "_selected_action": [pair.pk]}, follow=True
    )
    assert "Cleared 1 sign-in count" in cleared.content.decode()
    assert signed_in(sign_in("alice", PASSWORD, address="10.0.0.9")[0])
    assert Event.objects.filter(action="login.unlocked", data__by="admin").exists()
