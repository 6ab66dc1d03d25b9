"""Camera: take a photo or record a video; each capture becomes a gallery item.

The camera keeps no table of its own: a capture is a row of ``gallery.photos`` (see
:mod:`apps.gallery`) taken at the phone's current local time and tagged with the phone's current
place (the task's location, or the latest step of its location timeline that has begun), or
with no place while the phone's location setting is off. It needs the camera permission.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, format_local_time
from phoneenv.contract import Domain, Effect
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import tool

CAMERA = "android.permission.CAMERA"


class Capture(TypedDict):
    """What the camera just saved to the gallery."""

    photo_id: str
    kind: Literal["photo", "video"]
    taken: str
    place: str | None
    duration_s: int | None


ANDROID = AndroidDriver(
    tables={},
    tools=(),
    unavailable={
        "camera.take_photo": "a capture on a device needs a real camera frame and the camera app's UI; "
        "the virtual device has no camera, and a MediaStore insert would fake the capture",
        "camera.record_video": "as camera.take_photo: no camera on the virtual device, and writing a "
        "MediaStore row would fake the recording",
    },
)


class Camera(App):
    """The phone's camera."""

    name = "camera"
    title = "Camera"
    domain = Domain.DEVICE
    package = "com.android.camera2"
    permissions = (CAMERA,)
    android = ANDROID

    def current_place(self) -> str | None:
        """Where the phone is now (a place label), or None while location is switched off."""
        setting = self.phone.state.get("settings.settings", "location")
        if setting is not None and not setting["value"]:
            return None
        fx = self.phone.fixtures
        now = format_local_time(self.now(), seconds=True)
        place: str | None = fx.location.get("label") if fx.location else None
        for change in fx.location_timeline:
            if change.at <= now:
                place = change.label
        return place

    def _capture(self, kind: str, duration_s: int | None) -> Capture:
        gallery: Any = self.phone.apps["gallery"]
        rec = gallery.add_photo(kind, self.current_place(), duration_s)
        self.phone.state.meta["view"] = ("gallery", "detail", "photos", rec["id"])
        return {
            "photo_id": rec["id"],
            "kind": rec["kind"],
            "taken": rec["taken"],
            "place": rec["place"],
            "duration_s": rec["duration_s"],
        }

    @tool(effect=Effect.WRITE, permissions=(CAMERA,), writes=("gallery.photos",))
    def take_photo(self, lens: Literal["back", "front"] = "back") -> Capture:
        """Take a photo now. It is saved to the gallery with the current time and place.

        Args:
            lens: Which camera: "back" (the default) or "front" for a selfie.
        """
        return self._capture("photo", None)

    @tool(effect=Effect.WRITE, permissions=(CAMERA,), writes=("gallery.photos",))
    def record_video(self, seconds: Annotated[int, Field(ge=1, le=600)]) -> Capture:
        """Record a video of the given length now; it is saved to the gallery with the current
        time and place.

        Args:
            seconds: Length of the video, 1 to 600 seconds.
        """
        return self._capture("video", seconds)
