"""The airline agent's tools."""

from tau2.domains.airline.data_model import FlightDB, Reservation
from tau2.environment.toolkit import ToolKitBase, ToolType, is_tool


class AirlineTools(ToolKitBase):
    db: FlightDB

    @is_tool(ToolType.READ)
    def get_reservation_details(self, reservation_id: str) -> Reservation:
        """Get the details of a reservation.

        Args:
            reservation_id: The reservation id, such as 'ABC123'.
        """
        if reservation_id not in self.db.reservations:
            raise ValueError("Reservation not found")
        return self.db.reservations[reservation_id]

    @is_tool(ToolType.WRITE)
    def cancel_reservation(self, reservation_id: str) -> Reservation:
        """Cancel a reservation; the whole amount paid is refunded.

        Args:
            reservation_id: The reservation id, such as 'ABC123'.
        """
        reservation = self.get_reservation_details(reservation_id)
        if reservation.status == "cancelled":
            raise ValueError("Reservation is already cancelled")
        reservation.status = "cancelled"
        reservation.refunded = reservation.total_paid
        return reservation
