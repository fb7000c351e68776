"""The telecom agent's tools, and the provider-side functions tasks use to set a scenario up."""


from tau2.domains.telecom.data_model import Customer, Line, LineStatus, TelecomDB
from tau2.environment.toolkit import ToolKitBase, ToolType, is_tool


class TelecomTools(ToolKitBase):
    db: TelecomDB

    def _line(self, line_id: str) -> Line:
        for line in self.db.lines:
            if line.line_id == line_id:
                return line
        raise ValueError(f"Line {line_id} not found")

    def get_line_by_phone(self, phone_number: str) -> Line | None:
        return next((line for line in self.db.lines if line.phone_number == phone_number), None)

    @is_tool(ToolType.READ)
    def get_customer_by_phone(self, phone_number: str) -> Customer:
        """Find a customer by the phone number of one of their lines.

        Args:
            phone_number: The phone number, such as '555-0101'.
        """
        for customer in self.db.customers:
            if customer.phone_number == phone_number:
                return customer
        raise ValueError("Customer not found")

    @is_tool(ToolType.READ)
    def get_line_details(self, line_id: str) -> Line:
        """Get a line's status, plan usage and roaming setting.

        Args:
            line_id: The line id, such as 'L1'.
        """
        return self._line(line_id)

    @is_tool(ToolType.WRITE)
    def resume_line(self, line_id: str) -> str:
        """Resume a suspended line.

        Args:
            line_id: The line id, such as 'L1'.
        """
        line = self._line(line_id)
        if line.status != LineStatus.SUSPENDED:
            raise ValueError("Line is not suspended")
        line.status = LineStatus.ACTIVE
        return f"Line {line_id} resumed"

    @is_tool(ToolType.WRITE)
    def enable_roaming(self, line_id: str) -> str:
        """Enable international roaming on a line.

        Args:
            line_id: The line id, such as 'L1'.
        """
        self._line(line_id).roaming_enabled = True
        return f"Roaming enabled on line {line_id}"

    @is_tool(ToolType.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"

    def suspend_line(self, line_id: str) -> None:
        """Scenario set-up (not a tool): the line starts suspended."""
        self._line(line_id).status = LineStatus.SUSPENDED
