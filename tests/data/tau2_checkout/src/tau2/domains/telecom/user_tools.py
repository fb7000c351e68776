"""The user's own tools: their phone. Set-up functions and assertions are not tools."""

from tau2.domains.telecom.user_data_model import TelecomUserDB
from tau2.environment.toolkit import ToolKitBase, ToolType, is_tool


class TelecomUserTools(ToolKitBase):
    db: TelecomUserDB

    def _service(self) -> str:
        if self.db.device.airplane_mode:
            return "no service (airplane mode)"
        if not self.db.surroundings.line_active:
            return "no service"
        return "connected"

    @is_tool(ToolType.READ)
    def check_status_bar(self) -> str:
        """Look at the phone's status bar: signal and airplane mode."""
        return f"Status bar: {self._service()}"

    @is_tool(ToolType.WRITE)
    def toggle_airplane_mode(self) -> str:
        """Turn airplane mode on if it is off, off if it is on."""
        self.db.device.airplane_mode = not self.db.device.airplane_mode
        return f"Airplane mode is now {'on' if self.db.device.airplane_mode else 'off'}"

    @is_tool(ToolType.WRITE)
    def toggle_roaming(self) -> str:
        """Turn data roaming on the phone on if it is off, off if it is on."""
        self.db.device.roaming_enabled = not self.db.device.roaming_enabled
        return f"Data roaming is now {'on' if self.db.device.roaming_enabled else 'off'}"

    def set_user_info(self, name: str, phone_number: str) -> None:
        self.db.surroundings.name = name
        self.db.surroundings.phone_number = phone_number

    def set_user_location(self, abroad: bool) -> None:
        self.db.surroundings.is_abroad = abroad

    def turn_airplane_mode_on(self) -> None:
        self.db.device.airplane_mode = True

    def assert_service_status(self, expected_status: str) -> bool:
        return self._service() == expected_status

    def assert_roaming_works(self, expected: bool) -> bool:
        s = self.db.surroundings
        works = (not s.is_abroad) or (self.db.device.roaming_enabled and s.roaming_allowed)
        return works == expected
