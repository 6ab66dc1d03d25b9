"""The Android mappings declared beside the apps: lossless round trips and Android's own encodings."""

from __future__ import annotations

import calendar
import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from apps import APP_CLASSES
from phoneenv.farm import android as A
from phoneenv.tasks import load_suite

BERLIN = ZoneInfo("Europe/Berlin")
HOSTILE = [
    'it\'s "quoted"',
    "a; reboot",
    "x && rm -rf /",
    "a | cat",
    "$(id) `id` ${HOME}",
    "line1\nline2\r\n",
    "100%s done %",
    "back\\slash\\",
    "emoji 😀 CJK 漢字 RTL שלום",
    "-leading dash",
    "NULL",
    "",
    "Row: 1 _id=5, body=forged",
    "x" * 5000,
]


def _norm(value):
    """Fixture lists and tuples compare alike."""
    if isinstance(value, list):
        return tuple(value)
    return value


def _drivers():
    for name, cls in APP_CLASSES.items():
        driver = getattr(cls, "android", None)
        if driver is not None:
            yield name, cls, driver


def test_every_tool_is_either_offered_or_explained():
    for name, cls, driver in _drivers():
        names = {td.spec.name for td in cls.tool_defs()}
        assert set(driver.tools) <= names, f"{name}: driver names tools the app lacks"
        assert set(driver.unavailable) <= names
        assert set(driver.tools) | set(driver.unavailable) == names, f"{name}: a tool neither offered nor explained"
        assert not set(driver.tools) & set(driver.unavailable)
        for table in driver.tables:
            assert table in cls.tables or name == "system", f"{name}.{table} is not a table of the app"


def test_suite_fixture_records_round_trip_through_every_provider_table():
    checked = 0
    seen: set[int] = set()
    for task in load_suite():
        fx = task.fixtures
        if id(fx.records) in seen:
            continue
        seen.add(id(fx.records))
        tz = ZoneInfo(fx.timezone)
        for name, cls, driver in _drivers():
            for table, mapping in driver.tables.items():
                if not isinstance(mapping, A.ProviderTable):
                    continue
                prefix = cls.tables[table]
                for rec in fx.records.get(f"{name}.{table}", []):
                    row = A.encode_row(mapping, rec, tz)
                    row["_id"] = A.android_id(rec["id"], prefix)
                    children = {child.uri: rows for child, rows in A.encode_children(mapping, rec, tz)}
                    back = A.decode_record(mapping, prefix, row, children, tz)
                    assert {k: _norm(v) for k, v in rec.items()} == back
                    assert list(back) == list(rec), "decoded fields keep the sandbox's order"
                    checked += 1
    assert checked > 10_000


@pytest.mark.parametrize("text", HOSTILE)
def test_text_round_trips_unchanged(text):
    sms = APP_CLASSES["messages"].android.tables["messages"]
    rec = {
        "id": "m_7",
        "number": "+4915111111111",
        "direction": "out",
        "body": text,
        "time": "2026-11-29T09:00:01",
        "read": True,
    }
    row = A.encode_row(sms, rec, BERLIN)
    assert row["body"] == text
    row["_id"] = 7
    assert A.decode_record(sms, "m_", row, {}, BERLIN) == rec


def test_sms_row_uses_telephony_columns_and_constants():
    sms = APP_CLASSES["messages"].android.tables["messages"]
    rec = {
        "id": "m_2",
        "number": "+4915111111111",
        "direction": "in",
        "body": "hi",
        "time": "2026-11-29T09:00:00",
        "read": False,
    }
    row = A.encode_row(sms, rec, BERLIN)
    # 09:00 in Berlin on 29 Nov 2026 (CET, UTC+1) is 08:00 UTC.
    utc_ms = calendar.timegm((2026, 11, 29, 8, 0, 0)) * 1000
    assert row == {"address": "+4915111111111", "type": 1, "body": "hi", "date": utc_ms, "read": 0}
    assert sms.uri == "content://sms"


def test_call_log_types_and_duration():
    calls = APP_CLASSES["phone"].android.tables["calls"]
    tz = ZoneInfo("America/New_York")
    rec = {
        "id": "call_4",
        "number": "+4917657480530",
        "direction": "missed",
        "time": "2026-11-10T22:17:00",
        "duration_s": 0,
    }
    row = A.encode_row(calls, rec, tz)
    # 22:17 EST (UTC-5) is 03:17 UTC the next day.
    assert row == {
        "number": "+4917657480530",
        "type": 3,
        "date": calendar.timegm((2026, 11, 11, 3, 17, 0)) * 1000,
        "duration": 0,
    }
    assert calls.uri == "content://call_log/calls"


def test_calendar_all_day_events_are_utc_midnights_and_attendees_are_rows():
    events = APP_CLASSES["calendar"].android.tables["events"]
    tz = ZoneInfo("Asia/Tokyo")
    rec = {
        "id": "ev_3",
        "title": "Holiday",
        "start": "2026-11-30T00:00",
        "end": "2026-12-01T00:00",
        "location": None,
        "attendees": ("Ana Weber", "ben@example.com"),
        "notes": None,
        "all_day": True,
    }
    row = A.encode_row(events, rec, tz)
    assert row["dtstart"] == calendar.timegm((2026, 11, 30, 0, 0, 0)) * 1000
    assert row["dtend"] == calendar.timegm((2026, 12, 1, 0, 0, 0)) * 1000
    assert row["allDay"] == 1 and row["eventTimezone"] == "UTC" and row["calendar_id"] == 1
    [(child, rows), (reminders, none)] = A.encode_children(events, rec, tz)
    assert reminders.uri == "content://com.android.calendar/reminders" and none == []
    assert child.uri == "content://com.android.calendar/attendees"
    assert rows == [
        {"attendeeName": "Ana Weber", "attendeeEmail": None},
        {"attendeeName": "ben@example.com", "attendeeEmail": "ben@example.com"},
    ]
    timed = {**rec, "start": "2026-11-30T09:30", "end": "2026-11-30T10:00", "all_day": False}
    row = A.encode_row(events, timed, tz)
    # 09:30 JST (UTC+9) is 00:30 UTC.
    assert row["dtstart"] == calendar.timegm((2026, 11, 30, 0, 30, 0)) * 1000
    assert row["eventTimezone"] == "Asia/Tokyo"


def test_contacts_are_raw_contacts_with_data_rows():
    contacts = APP_CLASSES["contacts"].android.tables["contacts"]
    rec = {
        "id": "c_5",
        "name": "Maya Murphy",
        "phone": "+4917047049446",
        "email": None,
        "relation": "dad",
        "favorite": True,
        "birthday": "01-16",
    }
    assert A.encode_row(contacts, rec, BERLIN) == {"starred": 1}
    [(child, rows)] = A.encode_children(contacts, rec, BERLIN)
    assert child.parent_column == "raw_contact_id"
    assert rows == [
        {"mimetype": "vnd.android.cursor.item/name", "data1": "Maya Murphy"},
        {"mimetype": "vnd.android.cursor.item/relation", "data3": "dad", "data1": "me", "data2": 0},
        {"mimetype": "vnd.android.cursor.item/contact_event", "data1": "--01-16", "data2": 3},
        {"mimetype": "vnd.android.cursor.item/phone_v2", "data1": "+4917047049446", "data2": 2, "is_primary": 1},
    ]
    # A kind the mapping does not carry (a photo row) is ignored, not an error.
    row = {"_id": 5, "starred": 1}
    back = A.decode_record(
        contacts, "c_", row, {child.uri: [*rows, {"mimetype": "vnd.android.cursor.item/photo"}]}, BERLIN
    )
    assert back == rec


def test_a_contacts_numbers_and_addresses_are_labelled_phone_and_email_rows():
    contacts = APP_CLASSES["contacts"].android.tables["contacts"]
    rec = {
        "id": "c_2",
        "name": "Ana Lima",
        "phone": "+49301234567",
        "email": "ana@work.de",
        "relation": None,
        "favorite": False,
        "birthday": None,
        "phone_label": "work",
        "other_phones": ({"label": "mobile", "number": "+4915112345678"}, {"label": "other", "number": "+4930555"}),
        "email_label": "work",
        "other_emails": ({"label": "home", "address": "ana@x.com"},),
    }
    [(child, rows)] = A.encode_children(contacts, rec, BERLIN)
    phone, email = "vnd.android.cursor.item/phone_v2", "vnd.android.cursor.item/email_v2"
    # ContactsContract.CommonDataKinds.Phone TYPE_HOME 1, MOBILE 2, WORK 3, OTHER 7; Email HOME 1, WORK 2
    assert rows[1:] == [
        {"mimetype": phone, "data1": "+49301234567", "data2": 3, "is_primary": 1},
        {"mimetype": phone, "data1": "+4915112345678", "data2": 2, "is_primary": 0},
        {"mimetype": phone, "data1": "+4930555", "data2": 7, "is_primary": 0},
        {"mimetype": email, "data1": "ana@work.de", "data2": 2, "is_primary": 1},
        {"mimetype": email, "data1": "ana@x.com", "data2": 1, "is_primary": 0},
    ]
    back = A.decode_record(contacts, "c_", {"_id": 2, "starred": 0}, {child.uri: rows}, BERLIN)
    assert back == rec
    # a main number with the default label, and no others: the optional fields stay out
    plain = {k: v for k, v in rec.items() if k not in ("phone_label", "other_phones", "email_label", "other_emails")}
    [(_, rows)] = A.encode_children(contacts, {**plain, "email": None}, BERLIN)
    back = A.decode_record(contacts, "c_", {"_id": 2, "starred": 0}, {child.uri: rows}, BERLIN)
    assert back == {**plain, "email": None}


def test_alarm_time_days_and_label():
    alarms = APP_CLASSES["clock"].android.tables["alarms"]
    rec = {"id": "al_2", "time": "06:45", "label": None, "enabled": True, "days": ("mon", "fri", "sun")}
    row = A.encode_row(alarms, rec, BERLIN)
    assert row == {"hour": 6, "minutes": 45, "label": "", "enabled": 1, "daysofweek": 0x01 | 0x10 | 0x40, "vibrate": 1}
    row["_id"] = 2
    assert A.decode_record(alarms, "al_", row, {}, BERLIN) == rec


def test_settings_codecs():
    keys = APP_CLASSES["settings"].android.tables["settings"].keys
    ctx = A.Ctx(BERLIN)
    assert keys["brightness"].put_args(60, ctx) == ["settings", "put", "system", "screen_brightness", "153"]
    for pct in range(101):
        wire = keys["brightness"].codec.encode(pct, ctx)
        assert keys["brightness"].codec.decode(wire, ctx) == pct
    assert keys["wifi"].put_args(True, ctx) == ["svc", "wifi", "enable"]
    assert keys["dnd"].put_args(True, ctx) == ["cmd", "notification", "set_dnd", "priority"]
    assert keys["dark_mode"].put_args(False, ctx) == ["cmd", "uimode", "night", "no"]
    # wifi_on 3 is "off because of airplane mode" on Android (WifiSettingsStore).
    assert keys["wifi"].codec.decode("3", ctx) is False
    assert keys["wifi"].codec.decode("2", ctx) is True
    with pytest.raises(A.MappingError):
        keys["wifi"].codec.decode("7", ctx)
    with pytest.raises(A.MappingError):
        keys["brightness"].codec.encode(101, ctx)
    mapped = set(keys) | set(APP_CLASSES["settings"].android.tables["settings"].unmapped)
    from apps.settings import DEFAULTS

    assert mapped == set(DEFAULTS), "every setting is mapped or explained"


def test_ids():
    assert A.android_id("c_3", "c_") == 3
    assert A.sandbox_id(3, "c_") == "c_3"
    for bad in ("c_", "c_x", "m_3", "c_0", "active"):
        with pytest.raises(A.MappingError):
            A.android_id(bad, "c_")


def test_unmappable_values_are_refused():
    sms = APP_CLASSES["messages"].android.tables["messages"]
    rec = {
        "id": "m_1",
        "number": "+1",
        "direction": "sideways",
        "body": "x",
        "time": "2026-11-29T09:00:00",
        "read": False,
    }
    with pytest.raises(A.MappingError, match="sms type"):
        A.encode_row(sms, rec, BERLIN)
    with pytest.raises(A.MappingError, match="has no Android column"):
        A.encode_row(sms, {**rec, "direction": "in", "starred": True}, BERLIN)


def test_intent_arguments():
    typed = APP_CLASSES["messages"].android.typed["messages"]
    assert typed.compose.args({"number": "+4915111111111"}) == [
        "am",
        "start",
        "-W",
        "-a",
        "android.intent.action.SENDTO",
        "-d",
        "smsto:+4915111111111",
        "com.google.android.apps.messaging",
    ]
    assert typed.applies({"direction": "out"}) and not typed.applies({"direction": "in"})


def test_local_time_of_a_dst_gap_is_normalised_like_android():
    codec = A.local_time_codec("minutes")
    ny = ZoneInfo("America/New_York")
    wire = codec.encode("2026-03-08T02:30", A.Ctx(ny))  # clocks jump from 02:00 to 03:00
    assert codec.decode(wire, A.Ctx(ny)) == "2026-03-08T03:30"
    assert dt.datetime.fromtimestamp(wire / 1000, dt.timezone.utc).hour == 7


def test_a_mapping_naming_a_field_the_record_layout_lacks_is_refused():
    from typing_extensions import TypedDict

    from phoneenv.app import App
    from phoneenv.farm.android import AndroidDriver, Column, MappingError, ProviderTable

    class Spot(TypedDict):
        id: str
        label: str

    def driver(*fields: str) -> AndroidDriver:
        table = ProviderTable("spots", "content://spots", {f: Column(f) for f in fields})
        return AndroidDriver(tables={"spots": table}, tools=())

    class Fine(App):  # every mapped field is in the layout
        name = "parkfine"
        records = {"spots": Spot}  # noqa: RUF012
        android = driver("label")

    assert Fine.android is not None
    with pytest.raises(MappingError, match=r"parking\.spots: the Android mapping names field 'lable' .* Spot lacks"):

        class Parking(App):
            name = "parking"
            records = {"spots": Spot}  # noqa: RUF012
            android = driver("label", "lable")

    with pytest.raises(MappingError, match=r"parking\.spots: mapped to Android but the app declares no record layout"):

        class NoLayout(App):
            name = "parking"
            android = driver("label")
