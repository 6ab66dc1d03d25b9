"""The gallery and camera apps, and photos sent by text, through the sandbox backend.

The fixture clock is 2026-11-20 10:00:00 (Europe/Berlin); every call advances it by one second.
The phone is at "Old Town" until 10:30, then at "Harbour" (the location timeline).
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Feedback, Fixtures, TaskSpec

CAMERA = "android.permission.CAMERA"


def photo(rid: str, taken: str, place: str | None, people: tuple[str, ...] = (), kind: str = "photo") -> dict[str, Any]:
    return {
        "id": rid,
        "kind": kind,
        "taken": taken,
        "place": place,
        "people": people,
        "favorite": False,
        "duration_s": 30 if kind == "video" else None,
    }


PHOTOS = [
    photo("ph_1", "2026-11-14T11:00:00", "Old Town", ("Ana Lima", "Ben Ode")),
    photo("ph_2", "2026-11-14T11:20:00", "Old Town", ("Ana Lima",)),
    photo("ph_3", "2026-11-14T11:30:00", "Old Town", kind="video"),
    photo("ph_4", "2026-11-16T19:00:00", "home"),
]
ALBUMS = [{"id": "alb_1", "name": "Old Town day", "photo_ids": ("ph_2", "ph_1"), "created": "2026-11-14T21:00:00"}]
CONTACTS = [
    {
        "id": "c_1",
        "name": "Ana Lima",
        "phone": "+4915112345678",
        "email": None,
        "relation": None,
        "favorite": False,
        "birthday": None,
    }
]


def task(camera_granted: bool = True, location_on: bool = True) -> TaskSpec:
    return TaskSpec(
        id="gallery-test",
        domain="entertainment",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(
            records={
                "gallery.photos": PHOTOS,
                "gallery.albums": ALBUMS,
                "contacts.contacts": CONTACTS,
                "settings.settings": [{"id": "location", "value": location_on}],
            },
            clock="2026-11-20T10:00:00",
            timezone="Europe/Berlin",
            location={"label": "Old Town", "lat": 52.5, "lon": 13.4},
            location_timeline=[{"at": "2026-11-20T10:30:00", "label": "Harbour"}],
            permissions={"camera": {CAMERA: camera_granted}},
        ),
    )


class Phone:
    def __init__(self, **kw: Any) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(task(**kw))

    def __call__(self, tool: str, /, **args: Any) -> Feedback:
        entry = self.backend.tools()[tool]
        return self.backend.call(tool, entry.validator.validate(args))

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables()[name])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def ids(res: dict[str, Any]) -> list[str]:
    return [p["id"] for p in res["photos"]]


def test_schemas_are_valid_and_deleting_is_sensitive() -> None:
    tools = {n: e for n, e in SandboxBackend().tools().items() if n.split(".")[0] in ("gallery", "camera")}
    assert len(tools) == 15
    for entry in tools.values():
        Draft202012Validator.check_schema(entry.spec.parameters)
    assert tools["gallery.delete_photo"].spec.effect is Effect.SENSITIVE
    assert tools["gallery.delete_album"].spec.effect is Effect.SENSITIVE
    assert tools["camera.take_photo"].spec.effect is Effect.WRITE
    send = SandboxBackend().tools()["messages.send_photos"].spec
    assert send.effect is Effect.SENSITIVE and send.parameters["required"] == ["to", "photo_ids"]


def test_list_photos_filters_newest_first() -> None:
    phone = Phone()
    assert ids(ok(phone("gallery.list_photos"))) == ["ph_4", "ph_3", "ph_2", "ph_1"]
    day = ok(phone("gallery.list_photos", date_from="2026-11-14", date_to="2026-11-14", kind="photo"))
    assert ids(day) == ["ph_2", "ph_1"] and day["total"] == 2
    assert ids(ok(phone("gallery.list_photos", person="ben"))) == ["ph_1"]
    assert ids(ok(phone("gallery.list_photos", place="old town", kind="video"))) == ["ph_3"]
    fb = phone("gallery.list_photos", date_from="2026-11-15", date_to="2026-11-14")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/date_to"
    fb = phone("gallery.list_photos", date_from="2026-13-01")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/date_from"


def test_tags_and_favourites() -> None:
    phone = Phone()
    assert ok(phone("gallery.tag_person", photo_id="ph_2", name="Ben  Ode"))["people"] == ["Ana Lima", "Ben Ode"]
    assert ok(phone("gallery.tag_person", photo_id="ph_2", name="ana lima"))["people"] == ["Ana Lima", "Ben Ode"]
    assert ok(phone("gallery.untag_person", photo_id="ph_2", name="ANA LIMA"))["people"] == ["Ben Ode"]
    fb = phone("gallery.untag_person", photo_id="ph_2", name="Cleo")
    assert fb.error is ErrorKind.NOT_FOUND and fb.candidates == ["Ben Ode"]
    assert ok(phone("gallery.set_favorite", photo_id="ph_4"))["favorite"] is True
    assert phone("gallery.set_favorite", photo_id="ph_9").error is ErrorKind.NOT_FOUND


def test_albums_create_add_remove_and_delete() -> None:
    phone = Phone()
    res = ok(phone("gallery.create_album", name="Trip", photo_ids=["ph_1", "ph_1", "ph_4"]))
    assert res["id"] == "alb_2" and [p["id"] for p in res["photos"]] == ["ph_1", "ph_4"]
    assert phone("gallery.create_album", name="trip ").error is ErrorKind.CONFLICT
    fb = phone("gallery.create_album", name="Other", photo_ids=["ph_1", "ph_8"])
    assert fb.error is ErrorKind.NOT_FOUND and fb.path == "/photo_ids/1"
    assert set(phone.table("gallery.albums")) == {"alb_1", "alb_2"}  # the failed create made nothing
    added = ok(phone("gallery.add_to_album", album_id="alb_1", photo_ids=["ph_1", "ph_3"]))
    assert [p["id"] for p in added["photos"]] == ["ph_2", "ph_1", "ph_3"]
    fb = phone("gallery.remove_from_album", album_id="alb_1", photo_ids=["ph_4"])
    assert fb.error is ErrorKind.NOT_FOUND and fb.path == "/photo_ids/0"
    assert [
        p["id"] for p in ok(phone("gallery.remove_from_album", album_id="alb_1", photo_ids=["ph_2"]))["photos"]
    ] == [
        "ph_1",
        "ph_3",
    ]
    listed = ok(phone("gallery.list_albums"))
    assert [(a["name"], a["count"]) for a in listed["albums"]] == [("Old Town day", 2), ("Trip", 2)]
    assert ok(phone("gallery.delete_album", album_id="alb_2")) == {"deleted": "alb_2"}
    assert "ph_1" in phone.table("gallery.photos")  # its photos stay


def test_deleting_a_photo_takes_it_out_of_albums() -> None:
    phone = Phone()
    assert ok(phone("gallery.delete_photo", photo_id="ph_2")) == {"deleted": "ph_2"}
    assert phone.table("gallery.albums")["alb_1"]["photo_ids"] == ("ph_1",)
    assert "ph_2" not in phone.table("gallery.photos")


def test_several_photos_are_deleted_in_one_action_or_none_is() -> None:
    phone = Phone()
    bad = phone("gallery.delete_photos", photo_ids=["ph_1", "ph_9"])
    assert bad.error is ErrorKind.NOT_FOUND and bad.path == "/photo_ids/1"
    assert set(phone.table("gallery.photos")) == {"ph_1", "ph_2", "ph_3", "ph_4"}  # nothing deleted
    done = ok(phone("gallery.delete_photos", photo_ids=["ph_2", "ph_1", "ph_2"]))
    assert done == {"deleted": ["ph_2", "ph_1"], "total": 2}
    assert set(phone.table("gallery.photos")) == {"ph_3", "ph_4"}
    assert phone.table("gallery.albums")["alb_1"]["photo_ids"] == ()


def test_one_confirmation_covers_one_sensitive_call_and_a_batch_is_one_call() -> None:
    """With ``confirm_sensitive``, a confirmation admits the next sensitive call, whole: a batch
    delete of three photos needs one; the single delete after it needs its own."""
    from phoneenv.env import PhonePlanEnv

    t = task()
    t = t.model_copy(update={"fixtures": t.fixtures.model_copy(update={"confirm_sensitive": True})})
    env = PhonePlanEnv(tasks=[t])
    env.reset(seed=0, options={"task": t})

    def step(name: str, **args: Any) -> Feedback:
        return env.step({"name": name, "arguments": args})[-1]["feedback"]

    assert step("gallery.delete_photos", photo_ids=["ph_1", "ph_2"]).error is ErrorKind.CONFIRMATION_REQUIRED
    assert step("user.confirm", question="Delete the two Old Town photos?").ok
    assert step("gallery.delete_photos", photo_ids=["ph_1", "ph_2", "ph_3"]).result["total"] == 3
    assert step("gallery.delete_photo", photo_id="ph_4").error is ErrorKind.CONFIRMATION_REQUIRED


def test_a_photo_gets_the_time_and_the_place_where_the_phone_is() -> None:
    phone = Phone()
    shot = ok(phone("camera.take_photo"))
    assert shot == {
        "photo_id": "ph_5",
        "kind": "photo",
        "taken": "2026-11-20T10:00:01",
        "place": "Old Town",
        "duration_s": None,
    }
    assert phone.table("gallery.photos")["ph_5"]["people"] == ()
    phone.backend.phone.state.meta["now"] += 30 * 60  # 10:30:01: the timeline says Harbour
    video = ok(phone("camera.record_video", seconds=12))
    assert (video["photo_id"], video["place"], video["duration_s"]) == ("ph_6", "Harbour", 12)
    assert video["taken"] >= "2026-11-20T10:30"


def test_no_place_while_location_is_off_and_no_photo_without_the_permission() -> None:
    assert ok(Phone(location_on=False)("camera.take_photo"))["place"] is None
    phone = Phone(camera_granted=False)
    fb = phone("camera.take_photo")
    assert fb.error is ErrorKind.PERMISSION_DENIED
    assert set(phone.table("gallery.photos")) == {"ph_1", "ph_2", "ph_3", "ph_4"}
    ok(phone("system.request_permission", app="camera", permission=CAMERA))
    assert ok(phone("camera.take_photo"))["photo_id"] == "ph_5"


def test_photos_sent_by_text_are_stored_as_attachments() -> None:
    phone = Phone()
    res = ok(
        phone("messages.send_photos", to="+49 151 12345678", photo_ids=["ph_2", "ph_1", "ph_2"], body=" Old Town! ")
    )
    assert res["attachments"] == ["ph_2", "ph_1"] and res["contact"] == "Ana Lima" and res["body"] == "Old Town!"
    (msg,) = phone.table("messages.messages").values()
    assert msg["attachments"] == ("ph_2", "ph_1") and msg["number"] == "+4915112345678" and msg["direction"] == "out"
    fb = phone("messages.send_photos", to="+4915112345678", photo_ids=["ph_1", "ph_77"])
    assert fb.error is ErrorKind.NOT_FOUND and fb.path == "/photo_ids/1"
    assert len(phone.table("messages.messages")) == 1  # nothing half-sent


@pytest.mark.parametrize("bad", [{"photo_ids": []}, {"photo_ids": ["ph_1"], "to": "call me"}])
def test_send_photos_validates_its_arguments(bad: dict[str, Any]) -> None:
    from phoneenv.tools import ArgumentError

    entry = SandboxBackend().tools()["messages.send_photos"]
    with pytest.raises(ArgumentError):
        entry.validator.validate({"to": "+4915112345678", **bad})
