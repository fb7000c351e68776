"""The retail agent's tools."""

from tau2.domains.retail.data_model import Order, OrderPayment, RetailDB, User
from tau2.environment.toolkit import ToolKitBase, ToolType, is_tool


class RetailTools(ToolKitBase):
    db: RetailDB

    def _user(self, user_id: str) -> User:
        if user_id not in self.db.users:
            raise ValueError("User not found")
        return self.db.users[user_id]

    @is_tool(ToolType.READ)
    def find_user_id_by_email(self, email: str) -> str:
        """Find a user id by email.

        Args:
            email: The user's email address.
        """
        for user_id, user in self.db.users.items():
            if user.email.lower() == email.lower():
                return user_id
        raise ValueError("User not found")

    @is_tool(ToolType.READ)
    def get_order_details(self, order_id: str) -> Order:
        """Get the status and details of an order.

        Args:
            order_id: The order id, such as '#W0001'.
        """
        if order_id not in self.db.orders:
            raise ValueError("Order not found")
        return self.db.orders[order_id]

    @is_tool(ToolType.WRITE)
    def cancel_pending_order(self, order_id: str, reason: str) -> Order:
        """Cancel a pending order; a payment by gift card is refunded to the gift card at once.

        Args:
            order_id: The order id, such as '#W0001'.
            reason: 'no longer needed' or 'ordered by mistake'.
        """
        order = self.get_order_details(order_id)
        if order.status != "pending":
            raise ValueError("Non-pending order cannot be cancelled")
        if reason not in ("no longer needed", "ordered by mistake"):
            raise ValueError("Invalid reason")
        user = self._user(order.user_id)
        for payment in list(order.payment_history):
            order.payment_history.append(OrderPayment(transaction_type="refund", amount=payment.amount,
                                                      payment_method_id=payment.payment_method_id))
            if payment.payment_method_id == user.gift_card.id:
                user.gift_card.balance = round(user.gift_card.balance + payment.amount, 2)
        order.status = "cancelled"
        order.cancel_reason = reason
        return order

    @is_tool(ToolType.WRITE)
    def grant_store_credit(self, user_id: str, amount: float) -> User:
        """Set a user's store credit, as a goodwill gesture.

        Args:
            user_id: The user id, such as 'mia_li_1'.
            amount: The credit, in dollars.
        """
        user = self._user(user_id)
        user.store_credit = amount
        return user

    @is_tool(ToolType.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"
