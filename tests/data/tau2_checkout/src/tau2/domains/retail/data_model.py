"""The retail database: users with gift cards and store credit, and their orders."""

from typing import Dict, List, Literal, Optional

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
    orders: List[str]


class OrderPayment(BaseModel):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(BaseModel):
    order_id: str
    user_id: str
    status: Literal["pending", "delivered", "cancelled"]
    payment_history: List[OrderPayment]
    cancel_reason: Optional[str] = None


class RetailDB(DB):
    users: Dict[str, User]
    orders: Dict[str, Order]
