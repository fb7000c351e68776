"""The retail database: users with gift cards and store credit, and their orders."""

from typing import Literal

from pydantic import BaseModel

from tau2.environment.db import DB


class GiftCard(BaseModel):
    id: str
    balance: float


class User(BaseModel):
    user_id: str
    email: str
    gift_card: GiftCard
    store_credit: float = 0.0
    orders: list[str]


class OrderPayment(BaseModel):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(BaseModel):
    order_id: str
    user_id: str
    status: Literal["pending", "delivered", "cancelled"]
    payment_history: list[OrderPayment]
    cancel_reason: str | None = None


class RetailDB(DB):
    users: dict[str, User]
    orders: dict[str, Order]
